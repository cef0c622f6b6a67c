#pragma once

// What the reconciler tells a metrics sink (dcu-controller's /metrics,
// docs/metrics.md). An interface so that the core stays free of the
// exposition library: controller/service/controller_metrics implements it.
// Every call is cheap and never blocks (counters, a histogram sample).

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace dcu::controller {

class DeployMetrics {
 public:
  virtual ~DeployMetrics() = default;
  // A deployment event (its reason: Scheduled, Failed, Failover, ...).
  virtual void OnDeploymentEvent(absl::string_view reason) = 0;
  // A launch was sent (one attempt).
  virtual void OnAttempt() = 0;
  // A failed attempt was diagnosed: the top failure class ("unknown" when
  // nothing matched).
  virtual void OnDiagnosis(absl::string_view failure_class) = 0;
  // The failure of that class led to a fail-over to the next plan.
  virtual void OnFailover(absl::string_view failure_class) = 0;
  // The failure of that class was remediated automatically (retry now).
  virtual void OnRemediation(absl::string_view failure_class) = 0;
  // One reconcile pass, start to end.
  virtual void OnReconcilePass(absl::Duration took) = 0;
};

}  // namespace dcu::controller
