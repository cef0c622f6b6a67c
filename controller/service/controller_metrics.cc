#include "controller/service/controller_metrics.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"

namespace dcu::controller {

namespace {

using prometheus::Histogram;

std::string PhaseLabel(dcufleet::v1::DeploymentPhase p) {
  switch (p) {
    case dcufleet::v1::DEPLOYMENT_PENDING: return "Pending";
    case dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE: return "Unschedulable";
    case dcufleet::v1::DEPLOYMENT_LAUNCHING: return "Launching";
    case dcufleet::v1::DEPLOYMENT_READY: return "Ready";
    case dcufleet::v1::DEPLOYMENT_BACKOFF: return "BackOff";
    case dcufleet::v1::DEPLOYMENT_FAILED: return "Failed";
    case dcufleet::v1::DEPLOYMENT_DELETING: return "Deleting";
    case dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO: return "ScaledToZero";
    default: return "Unknown";
  }
}

const char* GrpcCodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::OK: return "OK";
    case grpc::CANCELLED: return "CANCELLED";
    case grpc::UNKNOWN: return "UNKNOWN";
    case grpc::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::NOT_FOUND: return "NOT_FOUND";
    case grpc::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::ABORTED: return "ABORTED";
    case grpc::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::INTERNAL: return "INTERNAL";
    case grpc::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::DATA_LOSS: return "DATA_LOSS";
    case grpc::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

Histogram::BucketBoundaries Buckets() {
  return Histogram::BucketBoundaries(common::LatencyBucketsSeconds());
}

// Counts the call when its status is sent (the one hook every kind of call,
// unary or streaming, passes exactly once).
class CountingInterceptor final : public grpc::experimental::Interceptor {
 public:
  CountingInterceptor(ControllerMetrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      metrics_->OnGrpcCall(method_, methods->GetSendStatus().error_code());
    }
    methods->Proceed();
  }

 private:
  ControllerMetrics* const metrics_;
  const std::string method_;
};

class CountingFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CountingFactory(ControllerMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CountingInterceptor(metrics_, info->method() ? info->method() : "unknown");
  }

 private:
  ControllerMetrics* const metrics_;
};

}  // namespace

ControllerMetrics::ControllerMetrics()
    : attempts_(prometheus::BuildCounter()
                    .Name("dcu_controller_attempts_total")
                    .Help("Launches sent (one per attempt of a deployment replica).")
                    .Register(registry_)
                    .Add({})),
      events_(prometheus::BuildCounter()
                  .Name("dcu_controller_deployment_events_total")
                  .Help("Deployment events recorded, by reason (Scheduled, Failed, Failover, ...).")
                  .Register(registry_)),
      diagnoses_(prometheus::BuildCounter()
                     .Name("dcu_controller_diagnoses_total")
                     .Help("Failed attempts diagnosed, by the top failure class.")
                     .Register(registry_)),
      failovers_(prometheus::BuildCounter()
                     .Name("dcu_controller_failovers_total")
                     .Help("Fail-overs to the next plan, by the failure class that caused them.")
                     .Register(registry_)),
      remediations_(prometheus::BuildCounter()
                        .Name("dcu_controller_remediations_total")
                        .Help("Automatic remediations (retry now with a fix), by failure class.")
                        .Register(registry_)),
      reconcile_(prometheus::BuildHistogram()
                     .Name("dcu_controller_reconcile_pass_duration_seconds")
                     .Help("Wall time of one deploy reconcile pass.")
                     .Register(registry_)
                     .Add({}, Buckets())),
      store_(prometheus::BuildHistogram()
                 .Name("dcu_store_transaction_duration_seconds")
                 .Help("Time a store transaction held the writer, BEGIN IMMEDIATE to the end of "
                       "COMMIT (or ROLLBACK), by result.")
                 .Register(registry_)),
      grpc_(prometheus::BuildCounter()
                .Name("dcu_controller_grpc_requests_total")
                .Help("Finished gRPC calls, by full method name and status code.")
                .Register(registry_)) {
  // Both results exist from the start, so a rate() has a series to read.
  store_.Add({{"result", "ok"}}, Buckets());
  store_.Add({{"result", "error"}}, Buckets());
}

void ControllerMetrics::OnDeploymentEvent(absl::string_view reason) {
  events_.Add({{"reason", std::string(reason)}}).Increment();
}
void ControllerMetrics::OnAttempt() { attempts_.Increment(); }
void ControllerMetrics::OnDiagnosis(absl::string_view c) {
  diagnoses_.Add({{"class", std::string(c)}}).Increment();
}
void ControllerMetrics::OnFailover(absl::string_view c) {
  failovers_.Add({{"class", std::string(c)}}).Increment();
}
void ControllerMetrics::OnRemediation(absl::string_view c) {
  remediations_.Add({{"class", std::string(c)}}).Increment();
}
void ControllerMetrics::OnReconcilePass(absl::Duration took) {
  reconcile_.Observe(absl::ToDoubleSeconds(took));
}
void ControllerMetrics::OnStoreTransaction(absl::Duration took, bool ok) {
  store_.Add({{"result", ok ? "ok" : "error"}}, Buckets()).Observe(absl::ToDoubleSeconds(took));
}
void ControllerMetrics::OnGrpcCall(const std::string& method, grpc::StatusCode code) {
  grpc_.Add({{"method", method}, {"code", GrpcCodeName(code)}}).Increment();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
ControllerMetrics::InterceptorFactory() {
  return std::make_unique<CountingFactory>(this);
}

common::MetricFamilies FleetStateFamilies(const FleetState& fleet,
                                          const DeployController* deployments) {
  common::MetricFamilies out;
  common::FamilyBuilder b(&out);
  // The snapshot shares the published views: no node is copied.
  auto views = fleet.Snapshot();
  std::map<std::string, int> by_state = {{"Ready", 0}, {"NotReady", 0}, {"Lost", 0}};
  int connected = 0;
  // Out of scheduling, by why: a person's cordon or drain, an agent's drain.
  std::map<std::string, int> held = {{"cordoned", 0}, {"drained", 0}, {"agent_drain", 0}};
  for (const auto& v : views) {
    ++by_state[std::string(common::NodeStateName(v->state()))];
    if (v->state() == dcufleet::v1::NODE_READY && v->connected_since_ms() != 0) ++connected;
    if (v->has_cordon()) {
      ++held[v->cordon().drain() ? "drained" : "cordoned"];
    } else if (v->has_drain()) {
      ++held["agent_drain"];
    }
  }
  b.Gauge("dcu_nodes", "Registered nodes, by state.");
  for (const auto& [state, n] : by_state) b.Add({{"state", state}}, n);
  b.Gauge("dcu_nodes_unschedulable",
          "Nodes that take no new replicas, by why: cordoned or drained by a person (dcuctl cordon, drain), "
          "or drained by their agent (a Slurm job ending).");
  for (const auto& [why, n] : held) b.Add({{"reason", why}}, n);
  b.Gauge("dcu_controller_connected_agents", "Agents with a live stream (nodes Ready and connected).");
  b.Add({}, connected);
  if (!deployments) return out;

  auto list = deployments->List();
  std::map<std::string, int> by_phase;
  for (int p = dcufleet::v1::DEPLOYMENT_PENDING; p <= dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO; ++p) {
    by_phase[PhaseLabel(static_cast<dcufleet::v1::DeploymentPhase>(p))] = 0;
  }
  for (const auto& d : list) ++by_phase[PhaseLabel(d.status().phase())];
  b.Gauge("dcu_deployments", "Deployments, by phase (of the replica that most needs attention).");
  for (const auto& [phase, n] : by_phase) b.Add({{"phase", phase}}, n);
  b.Gauge("dcu_deployment_replicas", "Replicas of each deployment: desired and ready.");
  for (const auto& d : list) {
    b.Add({{"deployment", d.spec().name()}, {"kind", "desired"}}, d.spec().replicas());
    b.Add({{"deployment", d.spec().name()}, {"kind", "ready"}}, d.ready_replicas());
  }
  b.Counter("dcu_replica_restarts_total",
            "Attempts of a replica that ended without being stopped on purpose.");
  for (const auto& d : list) {
    for (const auto& r : d.replicas()) {
      b.Add({{"deployment", d.spec().name()}, {"replica", absl::StrCat(r.index())}}, r.restarts());
    }
  }
  b.Gauge("dcu_replica_phase", "1 for each replica's phase, labelled with its node.");
  for (const auto& d : list) {
    for (const auto& r : d.replicas()) {
      b.Add({{"deployment", d.spec().name()},
             {"replica", absl::StrCat(r.index())},
             {"node", r.node()},
             {"phase", PhaseLabel(r.phase())}},
            1);
    }
  }
  return out;
}

common::ServedResponse ControllerMetrics::Scrape(const FleetState& fleet,
                                               const DeployController* deployments) const {
  return common::MetricsResponse(FleetStateFamilies(fleet, deployments), {&registry_});
}

}  // namespace dcu::controller
