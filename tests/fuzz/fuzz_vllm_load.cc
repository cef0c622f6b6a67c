// An engine's /metrics page (Prometheus text) as the agent and the gateway
// read vLLM's load from it (common/engine_metrics). Besides "nothing
// crashes": a load read is finite and not negative, and the cache figure
// lies in 0..1, since the gateway's picker compares these across replicas.
// The seeds follow pages quoted in public threads (vLLM 0.x: production-stack
// issue 318; V1 with an engine label per engine: vllm-project/vllm PR 22227).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/engine_metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto load = dcu::common::ParseVllmLoad(text);
  if (!load) return 0;
  auto count = [](double v) { return std::isfinite(v) && v >= 0; };
  if (!count(load->running) || !count(load->waiting) || !(load->kv_cache_usage >= 0) ||
      !(load->kv_cache_usage <= 1)) {
    std::fprintf(stderr, "load running=%g waiting=%g kv=%g\n", load->running, load->waiting,
                 load->kv_cache_usage);
    std::abort();
  }
  return 0;
}
