#pragma once

// dcu-agent --metrics-listen: the node's facts in Prometheus form
// (docs/metrics.md). Rendered from the last NodeStatus the agent built for
// the controller — the one source of truth, so a scrape and `dcuctl get
// nodes` can never disagree — plus what only this process counts: probe
// durations and failures by backend, report build time.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/http_server.h"
#include "common/metrics.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::agent {

struct ProbeSample {
  std::string backend;
  absl::Duration took;
  bool ok = false;
};

// Which deployment and replica an instance serves, as the controller's
// assignment says (the instance status does not carry them).
struct InstanceOwner {
  std::string deployment;
  int replica = 0;
};
using InstanceOwners = std::map<std::string, InstanceOwner>;  // by instance id

// The owner of each spec of an assignment. The replica index is read from
// the instance id, which the controller builds as DEPLOYMENT[-rK]-N-XXXXXX
// (controller/core/deploy_step.cc): with the deployment name known, the
// "-rK" after it is unambiguous.
InstanceOwners OwnersOf(const std::vector<dcufleet::v1::InstanceSpec>& specs);

// The snapshot families of one report (pure; tested alone): per device
// memory by view and kind, unreclaimed, schedulable free, holders by class,
// device info; instance phases; the engine figures the agent scraped from
// its instances (InstanceStatus.load), re-labelled with deployment and
// replica from `owners`. `node` labels every sample.
common::MetricFamilies NodeStatusFamilies(const std::string& node,
                                          const dcufleet::v1::NodeStatus& status,
                                          const InstanceOwners& owners = {});

class AgentMetrics {
 public:
  explicit AgentMetrics(std::string node);

  // After each report is built (Hello or NodeStatus): keeps it for the next
  // scrape and records how the probes went and how long the build took.
  void OnReport(const dcufleet::v1::NodeStatus& status, const std::vector<ProbeSample>& probes,
                absl::Duration build_took);

  // The /metrics answer.
  common::ServedResponse Scrape() const;

  // After each assignment: who owns each instance (for the engine figures'
  // deployment and replica labels).
  void OnAssignment(const std::vector<dcufleet::v1::InstanceSpec>& specs);

 private:
  const std::string node_;
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Histogram>& probe_duration_;
  prometheus::Family<prometheus::Counter>& probe_failures_;
  prometheus::Family<prometheus::Counter>& reports_;
  prometheus::Histogram& build_duration_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const dcufleet::v1::NodeStatus> last_ ABSL_GUARDED_BY(mu_);
  InstanceOwners owners_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::agent
