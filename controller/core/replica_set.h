#pragma once

// A deployment of N replicas is N documents, one per replica, each with the
// whole single-instance machinery of its own (plans, attempts, remediation,
// failover, orphans): a replica is placed, launched, supervised and failed
// over independently of its siblings. This file is the one home of what
// ties them together: the store key, the aggregate a reader sees, and which
// replicas a scale-down removes.

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "controller/store/deployment_store.h"
#include "dcufleet/v1/deploy.pb.h"

namespace dcu::controller {

// The key of a replica's document: ReplicaKey (controller/store/
// deployment_store.h). True when `key` is the key of one of NAME's replicas.
bool IsReplicaKeyOf(absl::string_view key, absl::string_view name);

// Attempts of `d` that ended without being stopped on purpose (a failure, a
// lost node): what `get deployments` counts as RESTARTS.
int Restarts(const dcufleet::v1::Deployment& d);

dcufleet::v1::ReplicaView ViewOfReplica(const dcufleet::v1::Deployment& d);

// What a reader sees of a deployment: the document of the replica that
// most needs attention (the first not Ready in index order, else the
// lowest index) with `replicas` (every replica, by index) and
// `ready_replicas` filled; phase READY only when every desired replica is
// Ready; revision: `revision` (the caller's per-deployment counter, which
// grows whenever any replica changes). `replicas` must not be empty.
dcufleet::v1::Deployment AggregateReplicas(
    const std::vector<const dcufleet::v1::Deployment*>& replicas, int64_t revision);

// The replica indices a scale-down to `target` removes, worst placed first:
// replicas not Ready before Ready ones, then those on the node that holds
// the most replicas of the deployment, then the highest index. Replicas
// already being removed are not counted as kept.
std::vector<int> ReplicasToRemove(const std::vector<const dcufleet::v1::Deployment*>& replicas,
                                  int target);

// The indices a scale-up to `target` adds: the lowest free ones.
std::vector<int> ReplicasToAdd(const std::vector<const dcufleet::v1::Deployment*>& replicas,
                               int target);

}  // namespace dcu::controller
