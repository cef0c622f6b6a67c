#pragma once

// Private to the deploy controller's sources (deploy_controller.cc,
// deploy_admission.cc, deploy_step.cc): what one reconcile pass knows, and
// the attempt helpers they share.

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "controller/core/deploy_controller.h"

namespace dcu::controller {

struct DeployController::StepContext {
  absl::Time now;
  int64_t now_ms = 0;
  // The fleet as of the pass start: immutable views shared with FleetState
  // (no copies), in name order, and what the scheduler reads of each.
  std::vector<std::shared_ptr<const dcufleet::v1::NodeView>> views;
  std::vector<ScheduleNode> sched;
  // Each view's revision (FleetState::SnapshotVersioned), by position.
  std::vector<uint64_t> revisions;
  std::shared_ptr<const absl::flat_hash_map<std::string, size_t>> index;
  // DeployController::index_epoch_ as of this pass's index.
  uint64_t index_epoch = 0;
  std::vector<std::pair<std::string, int64_t>> shapes;
  // First node with a usable device, per (model, utilization, TP): nodes
  // before it have none. Taking devices keeps that true; releasing them on
  // a node moves every cursor back to that node at most.
  std::map<std::tuple<std::string, double, int>, size_t> first_usable;
  std::vector<Event> events;
  // Nodes whose desired instance set may have changed in this pass.
  std::set<std::string> touched;
  // Per address that several nodes share, the ports taken on any of them
  // (ScheduleNode::host_ports points here; a deque, so the pointers stay
  // put). Built with `sched`.
  std::deque<absl::flat_hash_set<int>> shared_host_ports;
  // The knowledge's answers within the pass, asked once per deployment shape
  // instead of once per deployment (plans per model and arch; memory plans
  // per model, limits, utilization, TP and device size). A recorded launch
  // outcome can change verdicts: it drops the plans.
  std::map<std::pair<std::string, std::string>, ArchPlanSetPtr> plans;
  // (model, max_model_len, max_num_seqs, gpu_memory_utilization, TP,
  // device total) -> the plan, shared with every Schedule call that asks.
  using MemoryKey = std::tuple<std::string, int64_t, int64_t, double, int, int64_t>;
  std::map<MemoryKey, MemoryCheckPtr> memory;
  std::map<std::string, absl::StatusOr<ModelFacts>> models;
  // Per deployment name: how many of its replicas' active attempts each
  // node holds (the scheduler's spread preference).
  std::map<std::string, std::map<std::string, int>> replica_nodes;
  // What the node pools are told at the end of the pass: per pool, the
  // replicas that chose it because they fit nowhere (key -> devices), and
  // for every pool the replicas waiting for a node and the busy jobs.
  std::map<std::string, std::map<std::string, int>> pool_unplaceable;
  NodePool::Demand pool_demand;

  // Null for a node the pass does not know, and for every node once the
  // pass has let go of the views (ReleaseViews).
  const dcufleet::v1::NodeView* Node(const std::string& name) const {
    const size_t i = Position(name);
    return i == std::string::npos ? nullptr : views[i].get();
  }
  // The node's position in `views`; npos when unknown or let go.
  size_t Position(const std::string& name) const {
    auto it = index->find(name);
    return it == index->end() || it->second >= views.size() ? std::string::npos : it->second;
  }
  // After the step nothing reads the views: held, each one makes its node's
  // next report copy the whole view instead of changing it in place
  // (FleetState::ApplyDeltaInPlaceLocked). The scheduling summaries point
  // into the views, so they go too; the name index stays.
  void ReleaseViews() {
    views.clear();
    sched.clear();
    shared_host_ports.clear();
  }
  bool Known(const std::string& name) const { return index->contains(name); }
  ScheduleNode* Sched(const std::string& name) {
    auto it = index->find(name);
    return it == index->end() || it->second >= sched.size() ? nullptr : &sched[it->second];
  }
  void JoinNode(const std::string& deployment, const std::string& node) {
    ++replica_nodes[deployment][node];
  }
  void LeaveNode(const std::string& deployment, const std::string& node) {
    auto it = replica_nodes.find(deployment);
    if (it == replica_nodes.end()) return;
    auto n = it->second.find(node);
    if (n != it->second.end() && --n->second <= 0) it->second.erase(n);
  }
  // An attempt holds its devices and port (the port on every node of its
  // host).
  void Take(const dcufleet::v1::Placement& p) {
    ScheduleNode* n = Sched(p.node());
    if (!n) return;
    for (int i : p.device_indices()) n->busy_devices.insert(i);
    n->busy_ports.insert(p.port());
    if (n->host_ports) n->host_ports->insert(p.port());
  }
  // An attempt ended in this pass: its devices are free again (its port stays
  // taken while the node still reports the instance). Only this node can
  // have become usable: clearing the cursors instead made every failover
  // after it walk the fleet from its first node (BM_FailoverPass).
  void Release(const dcufleet::v1::Placement& p) {
    auto it = index->find(p.node());
    if (it == index->end() || it->second >= sched.size()) return;
    for (int i : p.device_indices()) sched[it->second].busy_devices.erase(i);
    for (auto& [key, first] : first_usable) first = std::min(first, it->second);
  }
};

namespace deploy_internal {

inline bool AttemptActive(const dcufleet::v1::Attempt& a) { return a.ended_at_ms() == 0; }

// Whether `d` wants an instance: not a replica being removed (deleted), not
// the document a deployment scaled to zero keeps. One rule for what the
// nodes are told to run and what the pass stops.
inline bool WantsInstance(const dcufleet::v1::Deployment& d) {
  return !d.status().deleted() && !d.status().scaled_to_zero();
}

inline bool HasActiveAttempt(const dcufleet::v1::Deployment& d) {
  return !d.status().attempts().empty() &&
         AttemptActive(d.status().attempts(d.status().attempts_size() - 1));
}

inline const dcufleet::v1::Attempt* LatestActive(const dcufleet::v1::Deployment& d) {
  if (!WantsInstance(d) || !HasActiveAttempt(d)) return nullptr;
  return &d.status().attempts(d.status().attempts_size() - 1);
}

inline dcufleet::v1::Attempt* ActiveAttempt(dcufleet::v1::Deployment& d) {
  if (d.status().attempts().empty()) return nullptr;
  dcufleet::v1::Attempt* a = d.mutable_status()->mutable_attempts(d.status().attempts_size() - 1);
  return AttemptActive(*a) ? a : nullptr;
}

// The attempts whose instances a node is meant to run: the active attempt
// and any orphans (attempts ended by a lost node whose instance may still
// run there). One rule for the desired sets, the held devices and AssignedTo.
template <typename F>
void ForEachAssignedAttempt(const dcufleet::v1::Deployment& d, F&& f) {
  if (!WantsInstance(d)) return;
  const auto& attempts = d.status().attempts();
  for (int i = 0; i < attempts.size(); ++i) {
    const bool latest_active = i == attempts.size() - 1 && AttemptActive(attempts[i]);
    if (latest_active || attempts[i].orphaned()) f(attempts[i]);
  }
}

inline bool HasOrphan(const dcufleet::v1::Deployment& d) {
  for (const auto& a : d.status().attempts()) {
    if (a.orphaned()) return true;
  }
  return false;
}

inline const dcufleet::v1::InstanceStatus* FindInstance(const dcufleet::v1::NodeView& n,
                                                        const std::string& id) {
  for (const auto& i : n.instances()) {
    if (i.instance_id() == id) return &i;
  }
  return nullptr;
}

inline std::string InstancePhaseName(dcufleet::v1::InstancePhase p) {
  std::string s = dcufleet::v1::InstancePhase_Name(p);
  return s.rfind("INSTANCE_", 0) == 0 ? s.substr(9) : s;
}

}  // namespace deploy_internal
}  // namespace dcu::controller
