// DeployController and the node pools (issue 20): the one place that
// decides whether a replica that fits no registered node asks a pool for
// one, and what the pools hear after each pass.

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/core/deploy_step_context.h"

namespace dcu::controller {

using dcufleet::v1::Deployment;

bool DeployController::ProvisionFromPool(Deployment& d, const std::vector<std::string>& fleet_lines,
                                         StepContext& ctx, bool* changed) {
  *changed = false;
  // A deployment pinned to a node waits for that node, not for a new one.
  if (pools_.empty() || !d.spec().node().empty()) return false;
  const std::string key = ReplicaKey(d);
  // The pool that already has a job for it, else the first that can give
  // a job enough devices.
  NodePool* pool = nullptr;
  for (NodePool* p : pools_) {
    if (p->HasLiveJob(key)) {
      pool = p;
      break;
    }
  }
  std::vector<std::string> refusals;
  for (size_t i = 0; !pool && i < pools_.size(); ++i) {
    std::string why = pools_[i]->CannotProvide(pools_[i]->DevicesFor(d.spec()));
    if (why.empty()) {
      pool = pools_[i];
    } else {
      refusals.push_back(std::move(why));
    }
  }
  if (!pool) return false;
  ctx.pool_unplaceable[pool->name()][key] = pool->DevicesFor(d.spec());
  std::string line;
  pool->JobFor(key, &line);
  auto* st = d.mutable_status();
  std::string msg = absl::StrCat("waiting for a node: ", line);
  if (!fleet_lines.empty()) absl::StrAppend(&msg, "; fits no registered node (", absl::StrJoin(fleet_lines, "; "), ")");
  // An event when the job (or its state) changes, not on every reason.
  const bool job_moved = !absl::StrContains(st->message(), line.substr(0, line.find(" (")));
  *changed = st->phase() != dcufleet::v1::DEPLOYMENT_PENDING || st->message() != msg;
  if (!*changed) return true;
  // Pending, not Unschedulable: deploy --wait waits for the job.
  st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
  st->set_message(msg);
  if (job_moved) AddEvent(ctx, d, "Normal", "Provisioning", line);
  return true;
}

void DeployController::UpdatePoolDemand(const Deployment& d, StepContext& ctx) {
  // The pass stepped `d`: what it is now decides (a replica placed in this
  // pass no longer waits, and its node's job is busy).
  ctx.pool_demand.waiting.erase(ReplicaKey(d));
  CollectPoolDemandOf(d, ctx);
}

void DeployController::CollectPoolDemandOf(const Deployment& d, StepContext& ctx) {
  // Every node that is meant to run an instance (orphans too) keeps its job.
  deploy_internal::ForEachAssignedAttempt(d, [&](const dcufleet::v1::Attempt& a) {
    const dcufleet::v1::NodeView* n = ctx.Node(a.placement().node());
    if (n && n->inventory().has_allocation() && !n->inventory().allocation().job_id().empty()) {
      ctx.pool_demand.busy_jobs.insert(n->inventory().allocation().job_id());
    }
  });
  // A replica with no instance that still wants one (waiting, backing
  // off) keeps its job; a failed or deleted one, or one scaled to zero,
  // does not.
  if (!deploy_internal::WantsInstance(d) || deploy_internal::HasActiveAttempt(d) ||
      d.status().phase() == dcufleet::v1::DEPLOYMENT_FAILED) {
    return;
  }
  ctx.pool_demand.waiting.insert(ReplicaKey(d));
}

}  // namespace dcu::controller
