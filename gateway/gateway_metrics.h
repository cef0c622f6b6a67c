#pragma once

// dcu-gateway --metrics-listen (docs/metrics.md): inference requests by
// model, replica and code; request duration and time to first byte;
// upstream retries; the wait queue's depth and the time requests waited in
// it; requests refused by the gateway itself, by reason.
//
// The model label is the deployment the request resolved to, or "unknown"
// for a name the fleet does not serve: a client's arbitrary names never
// become series of their own.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/http_server.h"
#include "common/metrics.h"

namespace dcu::gateway {

class GatewayMetrics {
 public:
  GatewayMetrics();

  // An inference request ended: `code` is the HTTP status sent to the
  // client ("499" when the client left first), `replica` HOST:PORT or
  // "none" when no replica answered.
  void OnRequestDone(const std::string& model, const std::string& replica, const std::string& code,
                     absl::Duration took);
  // The head of a replica's answer reached the gateway.
  void OnFirstByte(const std::string& model, absl::Duration after);
  // A replica failed before answering and the request is tried on another.
  void OnRetry(const std::string& model);
  // The gateway refused the request itself (reason: the OpenAI error code
  // it sent: queue_full, no_ready_replica, invalid_api_key, ...).
  void OnRejected(const std::string& reason);
  // A request left the wait queue after `waited`.
  void OnQueueLeft(absl::Duration waited);

  // `queued` is the wait queue's depth now (ProxyContext::queued).
  common::ServedResponse Scrape(int queued) const;

 private:
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Histogram>& ttfb_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Counter>& rejected_;
  prometheus::Histogram& queue_wait_;

  // The series already made, by their labels joined with '\0': a request
  // costs one hash lookup each, not prometheus-cpp's Family::Add (which
  // builds a whole metric, buckets and all, before finding the one it has).
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, prometheus::Counter*> requests_by_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, prometheus::Histogram*> duration_by_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, prometheus::Histogram*> ttfb_by_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, prometheus::Counter*> retries_by_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, prometheus::Counter*> rejected_by_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::gateway
