#include "agent/supervisor/engine_load_scraper.h"

#include <algorithm>
#include <set>

#include "common/engine_metrics.h"

namespace dcu::agent {

EngineLoadScraper::EngineLoadScraper(ListFn list, common::HttpClient* http,
                                     const common::Clock* clock, absl::Duration interval)
    : list_(std::move(list)), http_(http), clock_(clock), interval_(interval) {}

void EngineLoadScraper::Start() {
  if (interval_ <= absl::ZeroDuration()) return;
  thread_ = std::thread([this] {
    while (true) {
      ScrapeOnce();
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), interval_)) return;
    }
  });
}

void EngineLoadScraper::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void EngineLoadScraper::ScrapeOnce() {
  std::map<std::string, dcufleet::v1::EngineLoad> fresh;
  std::set<std::string> listed;
  for (const auto& st : list_()) {
    listed.insert(st.instance_id());
    if (st.phase() != dcufleet::v1::INSTANCE_READY || st.port() <= 0) continue;
    common::HttpRequest req;
    req.port = st.port();
    req.path = "/metrics";
    req.timeout = std::clamp(interval_ / 2, absl::Milliseconds(50), absl::Milliseconds(500));
    auto resp = http_->Send(req);
    if (!resp.ok() || resp->status != 200) continue;
    auto sample = common::ParseVllmLoad(resp->body);
    if (!sample) continue;
    dcufleet::v1::EngineLoad& load = fresh[st.instance_id()];
    load.set_running(sample->running);
    load.set_waiting(sample->waiting);
    load.set_kv_cache_usage(sample->kv_cache_usage);
    load.set_scraped_at_ms(absl::ToUnixMillis(clock_->Now()));
  }
  absl::MutexLock lock(&mu_);
  // Instances gone are forgotten; one that did not answer this round keeps
  // its last load until Fill finds it too old.
  for (auto it = loads_.begin(); it != loads_.end();) {
    it = listed.count(it->first) ? std::next(it) : loads_.erase(it);
  }
  for (auto& [id, load] : fresh) loads_[id] = std::move(load);
}

void EngineLoadScraper::Fill(std::vector<dcufleet::v1::InstanceStatus>* statuses) const {
  const int64_t oldest =
      absl::ToUnixMillis(clock_->Now() - 3 * std::max(interval_, absl::Seconds(1)));
  absl::MutexLock lock(&mu_);
  for (auto& st : *statuses) {
    auto it = loads_.find(st.instance_id());
    if (it == loads_.end() || it->second.scraped_at_ms() < oldest) continue;
    *st.mutable_load() = it->second;
  }
}

}  // namespace dcu::agent
