#include "gateway/engine_load_scraper.h"

#include <algorithm>

#include "common/engine_metrics.h"
#include "absl/time/clock.h"

namespace dcu::gateway {
std::optional<EngineLoad> ParseVllmLoad(const std::string& text) {
  auto sample = common::ParseVllmLoad(text);
  if (!sample) return std::nullopt;
  EngineLoad load;
  load.running = sample->running;
  load.waiting = sample->waiting;
  load.kv_cache_usage = sample->kv_cache_usage;
  return load;
}

ScrapingReplicaSource::ScrapingReplicaSource(std::unique_ptr<ReplicaSource> inner,
                                             std::unique_ptr<common::HttpClient> http,
                                             absl::Duration interval)
    : inner_(std::move(inner)), http_(std::move(http)), interval_(interval) {}

absl::Status ScrapingReplicaSource::Start(UpdateFn on_update) {
  on_update_ = std::move(on_update);
  absl::Status s = inner_->Start([this](ServingSet set) {
    {
      absl::MutexLock lock(&mu_);
      latest_ = set;
      ++generation_;
    }
    on_update_(std::move(set));
  });
  if (!s.ok()) return s;
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void ScrapingReplicaSource::Stop() {
  inner_->Stop();
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ScrapingReplicaSource::Loop() {
  while (true) {
    ServingSet set;
    uint64_t generation = 0;
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), interval_)) return;
      set = latest_;
      generation = generation_;
    }
    for (auto& model : set.models) {
      for (auto& r : model.replicas) {
        common::HttpRequest req;
        req.host = r.host;
        req.port = r.port;
        req.path = "/metrics";
        req.timeout = std::min(interval_, absl::Milliseconds(500));
        auto resp = http_->Send(req);
        if (!resp.ok() || resp->status != 200) continue;
        if (auto load = ParseVllmLoad(resp->body)) {
          r.load = *load;
          r.load.scraped_at_ms = absl::ToUnixMillis(absl::Now());
        }
      }
    }
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      // A newer set from the source meanwhile wins; its loads come next round.
      if (generation_ != generation) continue;
    }
    on_update_(std::move(set));
  }
}

}  // namespace dcu::gateway
