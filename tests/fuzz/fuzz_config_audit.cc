// The config.json audit on arbitrary text (JSON or not).
#include <cstdint>

#include "modelkit/config_audit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  dcu::modelkit::AuditOptions options;
  options.max_tp = 16;
  auto report = dcu::modelkit::AuditConfigText(text, "fuzz-model", options);
  (void)report.ByteSizeLong();
  auto config = dcu::modelkit::ParseModelConfig(text);
  if (config.ok()) {
    (void)dcu::modelkit::KvCacheBytesPerToken(*config, 8);
    (void)dcu::modelkit::EstimateWeightBytes(*config);
    (void)dcu::modelkit::ValidTensorParallelSizes(config->num_attention_heads,
                                                    config->EffectiveKvHeads(), 16);
  }
  return 0;
}
