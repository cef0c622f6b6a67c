#pragma once

#include <optional>
#include <string>

namespace dcu::common {

// vLLM's own load gauges, read from its /metrics (Prometheus text).
struct EngineLoadSample {
  double running = 0;         // vllm:num_requests_running, summed over engines
  double waiting = 0;         // vllm:num_requests_waiting, summed over engines
  double kv_cache_usage = 0;  // vllm:kv_cache_usage_perc (else the older
                              // vllm:gpu_cache_usage_perc), the highest, 0..1
};

// nullopt when neither request gauge is there (not a vLLM, or a page cut
// short). The agent (what it reports per instance) and the gateway (a
// replicas file with no controller) read engines with this one parser.
std::optional<EngineLoadSample> ParseVllmLoad(const std::string& metrics_text);

}  // namespace dcu::common
