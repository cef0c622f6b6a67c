#pragma once

#include <memory>
#include <vector>

#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/serving.pb.h"

namespace dcu::controller {

// What the fleet serves, for the gateway: every live deployment with its
// replicas (where, whether ready, the engine load last reported). The one
// place that knows how a deployment maps to replicas: today a deployment in
// DEPLOYMENT_READY with an endpoint ("NODE:PORT" as the deploy step writes
// it, or "http://HOST:PORT/v1") is one ready replica (index 0) on the node of
// its latest attempt, at that host (a node name: the gateway resolves it);
// any other live
// deployment is listed with no ready replica, so the gateway knows the model
// and holds its requests while it recovers. Deleted deployments are left out.
// `revision` is left 0 (the stream numbers its snapshots).
dcufleet::v1::ServingSnapshot ServingSnapshotOf(
    const std::vector<dcufleet::v1::Deployment>& deployments,
    const std::vector<std::shared_ptr<const dcufleet::v1::NodeView>>& nodes);

}  // namespace dcu::controller
