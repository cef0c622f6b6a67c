#include "gateway/gateway_metrics.h"

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

void GatewayMetrics::OnRequestDone(const std::string& model, const std::string& replica,
                                   const std::string& code, absl::Duration took) {
  requests_.Add({{"model", model}, {"replica", replica}, {"code", code}}).Increment();
  duration_.Add({{"model", model}}, Buckets()).Observe(absl::ToDoubleSeconds(took));
}

void GatewayMetrics::OnFirstByte(const std::string& model, absl::Duration after) {
  ttfb_.Add({{"model", model}}, Buckets()).Observe(absl::ToDoubleSeconds(after));
}

void GatewayMetrics::OnRetry(const std::string& model) {
  retries_.Add({{"model", model}}).Increment();
}

void GatewayMetrics::OnRejected(const std::string& reason) {
  rejected_.Add({{"reason", reason}}).Increment();
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
