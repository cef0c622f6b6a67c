#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/http_client.h"
#include "gateway/replica_source.h"

namespace dcu::gateway {

// Reads vLLM's own load from a /metrics body (Prometheus text):
// vllm:num_requests_running and vllm:num_requests_waiting summed over the
// engines listed, vllm:kv_cache_usage_perc (else the older
// vllm:gpu_cache_usage_perc) as the highest. nullopt when neither request
// gauge is there (not a vLLM).
std::optional<EngineLoad> ParseVllmLoad(const std::string& metrics_text);

// A ReplicaSource that adds engine load to another source's sets by
// scraping every replica's /metrics itself, every `interval`. For fleets
// whose source reports no load (a replicas file); the controller's
// snapshots carry what the agents scrape. A replica that does not answer
// keeps no load (the picker then judges it by the gateway's own counts).
class ScrapingReplicaSource : public ReplicaSource {
 public:
  ScrapingReplicaSource(std::unique_ptr<ReplicaSource> inner,
                        std::unique_ptr<common::HttpClient> http, absl::Duration interval);
  ~ScrapingReplicaSource() override { Stop(); }
  absl::Status Start(UpdateFn on_update) override;
  void Stop() override;

 private:
  void Loop();

  const std::unique_ptr<ReplicaSource> inner_;
  const std::unique_ptr<common::HttpClient> http_;
  const absl::Duration interval_;
  UpdateFn on_update_;
  absl::Mutex mu_;
  ServingSet latest_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // sets from inner_ so far
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace dcu::gateway
