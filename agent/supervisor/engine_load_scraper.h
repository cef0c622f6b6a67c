#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/http_client.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// Reads every Ready instance's own load from its /metrics (vLLM's
// vllm:num_requests_running / _waiting / kv_cache_usage_perc) about once a
// second, so that the node's status carries it to the controller and from
// there to dcu-gateway's picker (issue 17). One scrape per instance per
// interval, on loopback, each bounded by a short timeout: a hung engine
// costs the round that timeout, never the status report.
class EngineLoadScraper {
 public:
  using ListFn = std::function<std::vector<dcufleet::v1::InstanceStatus>()>;
  EngineLoadScraper(ListFn list, common::HttpClient* http, const common::Clock* clock,
                    absl::Duration interval);
  ~EngineLoadScraper() { Stop(); }

  // A thread scraping every interval; interval <= 0 starts nothing.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // One round (the thread's body; tests call it directly).
  void ScrapeOnce() ABSL_LOCKS_EXCLUDED(mu_);

  // Sets `load` on each status whose instance has a load younger than three
  // intervals (an old figure would steer the gateway by a queue that is
  // long gone; none makes it judge by its own counts).
  void Fill(std::vector<dcufleet::v1::InstanceStatus>* statuses) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const ListFn list_;
  common::HttpClient* const http_;
  const common::Clock* const clock_;
  const absl::Duration interval_;
  mutable absl::Mutex mu_;
  std::map<std::string, dcufleet::v1::EngineLoad> loads_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace dcu::agent
