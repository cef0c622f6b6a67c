// The config.json audit on arbitrary text (JSON or not).
#include <cstdint>

#include "controller/catalog/config_audit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  dcu::controller::AuditOptions options;
  options.max_tp = 16;
  auto report = dcu::controller::AuditConfigText(text, "fuzz-model", options);
  (void)report.ByteSizeLong();
  auto config = dcu::controller::ParseModelConfig(text);
  if (config.ok()) {
    (void)dcu::controller::KvCacheBytesPerToken(*config, 8);
    (void)dcu::controller::EstimateWeightBytes(*config);
    (void)dcu::controller::ValidTensorParallelSizes(config->num_attention_heads,
                                                    config->EffectiveKvHeads(), 16);
  }
  return 0;
}
