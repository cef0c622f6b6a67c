#include "common/metrics.h"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace dcu::common {

namespace {
prometheus::MetricFamily& Start(MetricFamilies* out, std::string name, std::string help,
                                prometheus::MetricType type) {
  out->emplace_back();
  auto& f = out->back();
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}
}  // namespace

FamilyBuilder& FamilyBuilder::Gauge(std::string name, std::string help) {
  Start(out_, std::move(name), std::move(help), prometheus::MetricType::Gauge);
  return *this;
}

FamilyBuilder& FamilyBuilder::Counter(std::string name, std::string help) {
  Start(out_, std::move(name), std::move(help), prometheus::MetricType::Counter);
  return *this;
}

FamilyBuilder& FamilyBuilder::Add(const MetricLabels& labels, double value) {
  auto& f = out_->back();
  f.metric.emplace_back();
  auto& m = f.metric.back();
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  if (f.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return *this;
}

const std::vector<double>& LatencyBucketsSeconds() {
  static const std::vector<double> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                               0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return kBuckets;
}

std::string RenderMetricsText(const MetricFamilies& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

ServedResponse MetricsResponse(MetricFamilies families,
                             std::initializer_list<const prometheus::Registry*> registries) {
  for (const auto* r : registries) {
    if (!r) continue;
    auto more = r->Collect();
    for (auto& f : more) families.push_back(std::move(f));
  }
  ServedResponse resp;
  resp.content_type = "text/plain; version=0.0.4; charset=utf-8";
  resp.body = RenderMetricsText(families);
  return resp;
}

}  // namespace dcu::common
