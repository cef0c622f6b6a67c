#include "gateway/gateway_metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dcu::gateway {

namespace {
prometheus::Histogram::BucketBoundaries Buckets() {
  return prometheus::Histogram::BucketBoundaries(common::LatencyBucketsSeconds());
}
}  // namespace

GatewayMetrics::GatewayMetrics()
    : requests_(prometheus::BuildCounter()
                    .Name("dcu_gateway_requests_total")
                    .Help("Inference requests answered, by model (deployment), replica and HTTP "
                          "status code (499: the client left first).")
                    .Register(registry_)),
      duration_(prometheus::BuildHistogram()
                    .Name("dcu_gateway_request_duration_seconds")
                    .Help("Inference request duration, arrival to the last byte sent, by model.")
                    .Register(registry_)),
      ttfb_(prometheus::BuildHistogram()
                .Name("dcu_gateway_time_to_first_byte_seconds")
                .Help("Arrival of a request to the head of the replica's answer, by model.")
                .Register(registry_)),
      retries_(prometheus::BuildCounter()
                   .Name("dcu_gateway_upstream_retries_total")
                   .Help("Requests retried on another replica after one failed before answering.")
                   .Register(registry_)),
      rejected_(prometheus::BuildCounter()
                    .Name("dcu_gateway_rejected_requests_total")
                    .Help("Inference requests the gateway refused itself, by reason.")
                    .Register(registry_)),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("dcu_gateway_queue_wait_seconds")
                      .Help("Time requests were held waiting for a ready replica.")
                      .Register(registry_)
                      .Add({}, Buckets())) {}

namespace {
// The series in `cache` under `key`, made by `make` the first time.
template <typename T, typename Make>
T* Series(absl::flat_hash_map<std::string, T*>& cache, absl::string_view key, Make make) {
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  T* made = make();
  cache.emplace(std::string(key), made);
  return made;
}
}  // namespace

void GatewayMetrics::OnRequestDone(const std::string& model, const std::string& replica,
                                   const std::string& code, absl::Duration took) {
  const std::string key = absl::StrCat(model, absl::string_view("\0", 1), replica,
                                       absl::string_view("\0", 1), code);
  prometheus::Counter* requests;
  prometheus::Histogram* duration;
  {
    absl::MutexLock lock(&mu_);
    requests = Series(requests_by_, key, [&] {
      return &requests_.Add({{"model", model}, {"replica", replica}, {"code", code}});
    });
    duration = Series(duration_by_, model,
                      [&] { return &duration_.Add({{"model", model}}, Buckets()); });
  }
  requests->Increment();
  duration->Observe(absl::ToDoubleSeconds(took));
}

void GatewayMetrics::OnFirstByte(const std::string& model, absl::Duration after) {
  prometheus::Histogram* ttfb;
  {
    absl::MutexLock lock(&mu_);
    ttfb = Series(ttfb_by_, model, [&] { return &ttfb_.Add({{"model", model}}, Buckets()); });
  }
  ttfb->Observe(absl::ToDoubleSeconds(after));
}

void GatewayMetrics::OnRetry(const std::string& model) {
  prometheus::Counter* retries;
  {
    absl::MutexLock lock(&mu_);
    retries = Series(retries_by_, model, [&] { return &retries_.Add({{"model", model}}); });
  }
  retries->Increment();
}

void GatewayMetrics::OnRejected(const std::string& reason) {
  prometheus::Counter* rejected;
  {
    absl::MutexLock lock(&mu_);
    rejected = Series(rejected_by_, reason, [&] { return &rejected_.Add({{"reason", reason}}); });
  }
  rejected->Increment();
}

void GatewayMetrics::OnQueueLeft(absl::Duration waited) {
  queue_wait_.Observe(absl::ToDoubleSeconds(waited));
}

common::ServedResponse GatewayMetrics::Scrape(int queued) const {
  common::MetricFamilies families;
  common::FamilyBuilder(&families)
      .Gauge("dcu_gateway_queue_depth", "Requests waiting now for a ready replica.")
      .Add({}, queued);
  return common::MetricsResponse(std::move(families), {&registry_});
}

}  // namespace dcu::gateway
