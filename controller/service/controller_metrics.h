#pragma once

// dcu-controller's /metrics (docs/metrics.md): the counters the reconciler,
// the store and the gRPC edge report while they work (DeployMetrics, the
// store's transaction observer, GrpcMetricsInterceptorFactory), and the
// fleet's state read at scrape time from FleetState's snapshot and the
// deployments' list — the same state ListNodes/ListDeployments answer from.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

#include "common/http_server.h"
#include "common/metrics.h"
#include "controller/core/deploy_controller.h"
#include "controller/core/deploy_metrics.h"
#include "controller/core/fleet_state.h"

namespace dcu::controller {

class ControllerMetrics final : public DeployMetrics {
 public:
  ControllerMetrics();

  // DeployMetrics.
  void OnDeploymentEvent(absl::string_view reason) override;
  void OnAttempt() override;
  void OnDiagnosis(absl::string_view failure_class) override;
  void OnFailover(absl::string_view failure_class) override;
  void OnRemediation(absl::string_view failure_class) override;
  void OnReconcilePass(absl::Duration took) override;

  // SqliteDatabase's transaction observer.
  void OnStoreTransaction(absl::Duration took, bool ok);
  // One finished gRPC call (the interceptor).
  void OnGrpcCall(const std::string& method, grpc::StatusCode code);

  // The /metrics answer: the counters plus the fleet's state now.
  common::ServedResponse Scrape(const FleetState& fleet, const DeployController* deployments) const;

  // Counts every call of the server it is installed on, by method and code.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

 private:
  prometheus::Registry registry_;
  prometheus::Counter& attempts_;
  prometheus::Family<prometheus::Counter>& events_;
  prometheus::Family<prometheus::Counter>& diagnoses_;
  prometheus::Family<prometheus::Counter>& failovers_;
  prometheus::Family<prometheus::Counter>& remediations_;
  prometheus::Histogram& reconcile_;
  prometheus::Family<prometheus::Histogram>& store_;
  prometheus::Family<prometheus::Counter>& grpc_;
};

// The fleet-state families alone (tests read them without a registry).
common::MetricFamilies FleetStateFamilies(const FleetState& fleet,
                                          const DeployController* deployments);

}  // namespace dcu::controller
