#pragma once

// Prometheus text exposition for dcufleet's three /metrics endpoints
// (docs/metrics.md). The serializer and the live instruments (counters,
// histograms) are prometheus-cpp's core library (Debian's
// prometheus-cpp-dev, 1.0.1): its TextSerializer writes the HELP/TYPE
// lines, escapes label values and writes histograms as _bucket{le}/_sum/
// _count. Its HTTP "pull" part (civetweb) is not used: each process serves
// /metrics on the Beast listener it already has (common/http_server.h).
//
// Snapshot metrics — figures that are a fact of a report or of the fleet
// state, not a count kept by the process (device memory, nodes by state) —
// are built at scrape time with FamilyBuilder from the same message the
// rest of the system reads, so a scrape can never disagree with it.

#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "common/http_server.h"

namespace dcu::common {

using MetricFamilies = std::vector<prometheus::MetricFamily>;
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Builds gauge and counter families from a snapshot, one Add per sample.
class FamilyBuilder {
 public:
  explicit FamilyBuilder(MetricFamilies* out) : out_(out) {}
  // Starts a family; the Adds after it belong to it. A family with no
  // sample is still written (HELP and TYPE), so a dashboard sees the name.
  FamilyBuilder& Gauge(std::string name, std::string help);
  FamilyBuilder& Counter(std::string name, std::string help);
  FamilyBuilder& Add(const MetricLabels& labels, double value);

 private:
  MetricFamilies* out_;
};

// Latency buckets in seconds: 0.5 ms to 10 s, about ×2.5 apart.
const std::vector<double>& LatencyBucketsSeconds();

// The exposition text of `families` (text format 0.0.4).
std::string RenderMetricsText(const MetricFamilies& families);
// families + every family of each registry, as a 200 answer with the text
// format's content type.
ServedResponse MetricsResponse(MetricFamilies families,
                             std::initializer_list<const prometheus::Registry*> registries);

}  // namespace dcu::common
