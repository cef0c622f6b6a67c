#pragma once

// The read side of FleetService as plain functions: the gRPC handlers
// (fleet_service.cc) and the controller's JSON API (http_api.cc) both call
// these, so /api/v1/ answers with the very messages dcuctl gets and the two
// can never diverge. No gRPC here.

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/core/deploy_controller.h"
#include "controller/core/fleet_state.h"
#include "controller/core/model_sources.h"
#include "controller/store/api_key_store.h"
#include "controller/store/catalog_store.h"
#include "controller/store/node_store.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::controller {

struct FleetServiceDeps {
  FleetState* fleet = nullptr;
  DeployController* deployments = nullptr;
  EventLog* events = nullptr;
  CatalogStore* catalog = nullptr;
  // The gateways' API keys (dcuctl apikey); nullptr: not managed here.
  ApiKeyStore* api_keys = nullptr;
  // Called after a successful import (drops caches).
  std::function<void()> on_catalog_changed;
  std::string db_path;
  int schema_version = 0;
  // The fleet's shared directory and mirror (dcu-controller
  // --model-shared-dir, --model-mirror; `repo` unset: each model's hf_repo):
  // where `dcuctl model copy` copies from when no node has a usable copy.
  ModelOrigins model_origins;
};

absl::StatusOr<dcufleet::v1::ListNodesResponse> ReadNodes(const FleetServiceDeps& deps);
absl::StatusOr<dcufleet::v1::ListDeploymentsResponse> ReadDeployments(const FleetServiceDeps& deps);
// The deployment and the events of this incarnation of it.
absl::StatusOr<dcufleet::v1::GetDeploymentResponse> ReadDeployment(const FleetServiceDeps& deps,
                                                                   const std::string& name);
absl::StatusOr<dcufleet::v1::ListStacksResponse> ReadStacks(
    const FleetServiceDeps& deps, const dcufleet::v1::ListStacksRequest& req);
absl::StatusOr<dcufleet::v1::ListEventsResponse> ReadEvents(
    const FleetServiceDeps& deps, const dcufleet::v1::ListEventsRequest& req);

// The events of this incarnation of the deployment in `resp` (events older
// than its creation belong to a predecessor of the same name).
void FillDeploymentEvents(EventLog* events, const std::string& name,
                          dcufleet::v1::GetDeploymentResponse* resp);

}  // namespace dcu::controller
