// libFuzzer target for the model config parser and the audit built on it:
// whatever bytes config.json holds, nothing crashes, throws or reads out of
// bounds, and the report still serialises.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "controller/catalog/config_audit.h"
#include "controller/catalog/remediation.h"

namespace {

const dcu::controller::AuditOptions& Options() {
  static const auto* options = [] {
    auto* o = new dcu::controller::AuditOptions();
    dcufleet::v1::ModelEntry m;
    m.set_name("qwen3-32b");
    auto* f = m.mutable_fingerprint();
    f->add_architectures("Qwen3ForCausalLM");
    f->set_model_type("qwen3");
    f->set_hidden_size(5120);
    f->set_num_attention_heads(64);
    f->set_num_key_value_heads(8);
    f->set_head_dim(128);
    f->set_num_hidden_layers(64);
    f->set_vocab_size(151936);
    f->set_torch_dtype("bfloat16");
    o->models.push_back(m);
    dcufleet::v1::Stack s;
    s.set_id("fuzz-stack");
    auto* b = s.add_attention_backends();
    b->set_name("FLASH_ATTN");
    b->set_is_default(true);
    for (int h : {32, 64, 96, 128, 160, 192, 224, 256}) b->add_head_sizes(h);
    s.mutable_capabilities()->set_accepts_hf_overrides(true);
    o->stacks.push_back(s);
    return o;
  }();
  return *options;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = dcu::controller::ParseModelConfig(text);
  if (parsed.ok()) {
    (void)dcu::controller::KvCacheBytesPerToken(*parsed, 4);
    (void)dcu::controller::EstimateWeightBytes(*parsed);
  }
  dcufleet::v1::AuditReport report = dcu::controller::AuditConfigText(text, "Qwen3-32B", Options());
  (void)dcu::controller::AuditReportToJson(report).dump();
  auto plan = dcu::controller::PlanConfigRemediation("/models/Qwen3-32B", {"config.json", "a"}, text,
                                                     Options().models[0], &Options().stacks[0]);
  (void)plan;
  return 0;
}
