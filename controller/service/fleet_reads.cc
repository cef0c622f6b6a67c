#include "controller/service/fleet_reads.h"

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/input_rules.h"
#include "modelkit/stack_view.h"

namespace dcu::controller {

void FillDeploymentEvents(EventLog* events, const std::string& name,
                          dcufleet::v1::GetDeploymentResponse* resp) {
  if (!events) return;
  auto list = events->ListEvents("deployment", name, 200);
  if (!list.ok()) return;
  const int64_t born_ms = resp->deployment().status().created_at_ms();
  for (const auto& e : *list) {
    if (e.at_ms < born_ms) continue;
    auto* v = resp->add_events();
    v->set_at_ms(e.at_ms);
    v->set_type(e.type);
    v->set_reason(e.reason);
    v->set_message(e.message);
  }
}

absl::StatusOr<dcufleet::v1::ListNodesResponse> ReadNodes(const FleetServiceDeps& deps) {
  if (!deps.fleet) return absl::UnavailableError("the fleet state is not enabled");
  dcufleet::v1::ListNodesResponse resp;
  for (auto& n : deps.fleet->ListNodes()) *resp.add_nodes() = std::move(n);
  return resp;
}

absl::StatusOr<dcufleet::v1::ListDeploymentsResponse> ReadDeployments(const FleetServiceDeps& deps) {
  if (!deps.deployments) return absl::UnavailableError("deployments are not enabled");
  dcufleet::v1::ListDeploymentsResponse resp;
  for (auto& d : deps.deployments->List()) *resp.add_deployments() = std::move(d);
  return resp;
}

absl::StatusOr<dcufleet::v1::GetDeploymentResponse> ReadDeployment(const FleetServiceDeps& deps,
                                                                   const std::string& name) {
  if (absl::Status s = common::CheckName("deployment name", name); !s.ok()) return s;
  if (!deps.deployments) return absl::UnavailableError("deployments are not enabled");
  auto d = deps.deployments->Get(name);
  if (!d.ok()) return d.status();
  dcufleet::v1::GetDeploymentResponse resp;
  *resp.mutable_deployment() = *std::move(d);
  FillDeploymentEvents(deps.events, name, &resp);
  return resp;
}

absl::StatusOr<dcufleet::v1::ListStacksResponse> ReadStacks(
    const FleetServiceDeps& deps, const dcufleet::v1::ListStacksRequest& req) {
  if (!deps.catalog) return absl::UnavailableError("the catalog is not enabled");
  if (!req.arch().empty() && req.arch().size() > 32) {
    return absl::InvalidArgumentError("arch is longer than 32 characters");
  }
  auto stacks = deps.catalog->ListStacks();
  if (!stacks.ok()) return stacks.status();
  auto evidence = deps.catalog->ListEvidence(EvidenceFilter());
  if (!evidence.ok()) return evidence.status();
  auto envs = deps.catalog->ListNodeEnvironments("");
  if (!envs.ok()) return envs.status();
  return modelkit::BuildListStacksResponse(req, *stacks, *evidence, *envs);
}

absl::StatusOr<dcufleet::v1::ListEventsResponse> ReadEvents(
    const FleetServiceDeps& deps, const dcufleet::v1::ListEventsRequest& req) {
  if (!deps.events) return absl::UnavailableError("the event log is not enabled");
  if (!req.kind().empty() && req.kind() != "deployment" && req.kind() != "node") {
    return absl::InvalidArgumentError(
        absl::StrCat("event kind '", req.kind(), "' is not 'deployment' or 'node'"));
  }
  if (!req.name().empty()) {
    if (req.kind().empty()) {
      return absl::InvalidArgumentError("an event name needs its kind (deployment, node)");
    }
    if (absl::Status s = common::CheckName("name", req.name()); !s.ok()) return s;
  }
  if (req.limit() < 0 || req.limit() > 5000) {
    return absl::InvalidArgumentError("limit must be between 0 and 5000");
  }
  if (req.after_id() < 0) {
    return absl::InvalidArgumentError("after_id must be 0 (the newest events) or an event's id");
  }
  // A short store read: the store's own connection, no agent round trip.
  auto list = deps.events->QueryEvents(
      EventQuery{req.kind(), req.name(), req.limit() ? req.limit() : 500, req.after_id()});
  if (!list.ok()) return list.status();
  dcufleet::v1::ListEventsResponse resp;
  for (const auto& e : *list) {
    auto* v = resp.add_events();
    v->set_id(e.event_id);
    v->set_at_ms(e.at_ms);
    v->set_kind(e.subject_kind);
    v->set_name(e.subject);
    v->set_type(e.type);
    v->set_reason(e.reason);
    v->set_message(e.message);
  }
  return resp;
}

}  // namespace dcu::controller
