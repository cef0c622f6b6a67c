#pragma once

// A deployment of N replicas is N documents, one per replica, each with the
// whole single-instance machinery of its own (plans, attempts, remediation,
// failover, orphans): a replica is placed, launched, supervised and failed
// over independently of its siblings. This file is the one home of what
// ties them together: the store key, the aggregate a reader sees, and which
// replicas a scale-down removes.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/store/deployment_store.h"
#include "dcufleet/v1/deploy.pb.h"

namespace dcu::controller {

// The key of a replica's document: ReplicaKey (controller/store/
// deployment_store.h). True when `key` is the key of one of NAME's replicas.
bool IsReplicaKeyOf(absl::string_view key, absl::string_view name);

// When `d`'s incarnation (uid) was created: uid_created_at_ms, or for a
// document written before that field, the replica's own creation.
int64_t BornAtMs(const dcufleet::v1::Deployment& d);

// Attempts of `d` that ended without being stopped on purpose (a failure, a
// lost node): what `get deployments` counts as RESTARTS.
int Restarts(const dcufleet::v1::Deployment& d);

dcufleet::v1::ReplicaView ViewOfReplica(const dcufleet::v1::Deployment& d);

// Which replica speaks for a deployment (AggregateReplicas shows its
// document; `dcuctl logs` without --replica reads its log): the first live
// one not Ready while fewer than wanted serve, else the first Ready one (a
// replica still coming beyond that is `extra`); one being removed only
// when all are. `sorted`: every replica by index; `ready`: how many are
// Ready. `replicas` must not be empty.
struct SpeakingReplicas {
  const dcufleet::v1::Deployment* shown = nullptr;
  const dcufleet::v1::Deployment* extra = nullptr;
  std::vector<const dcufleet::v1::Deployment*> sorted;
  int ready = 0;
};
SpeakingReplicas SpeakingReplicaOf(const std::vector<const dcufleet::v1::Deployment*>& replicas);

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

// Scale to zero. A deployment scaled to zero keeps one document, so that
// its spec, its name at the gateway and its events stay: spec.replicas 0,
// status.scaled_to_zero, phase SCALED_TO_ZERO. Its instance is stopped as a
// removed replica's is (deploy_internal::WantsInstance), nothing is placed
// for it, and a scale up replaces it with placed replicas (Scale).

// `d` is the document a deployment scaled to zero keeps (not one being
// deleted).
bool ScaledToZero(const dcufleet::v1::Deployment& d);
// `r` as the document that holds its deployment's spec at zero replicas:
// on the target spec when a rollout was under way (nothing is left to roll),
// revision bumped; its attempts are kept (the active one is stopped by the
// pass).
dcufleet::v1::Deployment ParkedReplica(const dcufleet::v1::Deployment& r, int64_t now_ms);
// The message of such a document: whether its instance is still stopping,
// and how to start it again.
std::string ScaledToZeroMessage(const dcufleet::v1::Deployment& d);

// Rollouts. A deployment deployed again with another spec (not only another
// replica count) records the new spec as every live replica's
// `target_spec`; replicas on an older spec are replaced one at a time.

// The spec `d` should run: its target_spec, or its own spec before any
// rollout.
const dcufleet::v1::DeploymentSpec& TargetSpec(const dcufleet::v1::Deployment& d);
// Two specs that differ at most in `replicas`.
bool SameSpecButReplicas(const dcufleet::v1::DeploymentSpec& a,
                         const dcufleet::v1::DeploymentSpec& b);
// `d` runs its target spec.
bool OnTargetSpec(const dcufleet::v1::Deployment& d);
// "max_model_len 32768 -> 8192, stack '' -> 'vllm-0.9.2'": the fields that
// differ, for events and the rollout's answer ("" when none but replicas).
std::string SpecChanges(const dcufleet::v1::DeploymentSpec& from,
                        const dcufleet::v1::DeploymentSpec& to);

// "model qwen3-32b TP=4 max_model_len=8192 replicas=2": a spec in words,
// for the Created event.
std::string CreationSummary(const dcufleet::v1::DeploymentSpec& spec);
// The same without replicas, for revision 1's change: a scale is not a
// revision (as replicas are not part of a ReplicaSet's pod template), and
// revision 1's change is worded on read from the spec as it is now, so
// with replicas in it a scale rewrote what the creation said.
std::string RevisionSummary(const dcufleet::v1::DeploymentSpec& spec);

// Revisions: the spec a deployment was created with is revision 1; each
// rollout (a new spec, a restart, an undo) starts the next. Kept on every
// live replica (current_revision, revision_history), so that `dcuctl
// rollout history` lists them and `rollout undo --to-revision` finds them.
// As many earlier revisions as Kubernetes keeps by default
// (revisionHistoryLimit).
inline constexpr int kRevisionHistoryLimit = 10;
// The revision `d` runs or rolls to, its spec left unset. A document that
// carries none is on revision 1 since its creation; one written before
// revisions were kept that has rolled out (it has a previous_spec) is
// counted as on revision 2.
dcufleet::v1::SpecRevision CurrentRevision(const dcufleet::v1::Deployment& d);
// Records on `d` that a rollout to `next` begins at `now_ms`: the revision
// it was on goes to the history with its spec (previous_spec is that spec
// too), and `next` becomes the next number. A spec in the history that
// `next` matches (ignoring `replicas`: an undo) leaves it, since it is
// the current one again; the oldest go past kRevisionHistoryLimit.
void StartRevision(dcufleet::v1::Deployment* d, const dcufleet::v1::DeploymentSpec& next,
                   int64_t now_ms, std::string change);

// What the rollout does next to one deployment. Surge first, so that N
// stay Ready while devices allow: when every replica on the target spec is
// Ready and no more than N replicas live, one more is added on the target
// spec; when more than N live, an old one goes (not Ready first, then the
// most crowded node, then the highest index). When a new replica cannot be
// scheduled though it has a usable plan (no free devices for the surge), an
// old one goes first to make room, so N−1 stay Ready; one with no usable
// plan (the new spec failed on every stack) stalls the rollout with the old
// replicas serving. Nothing happens while a replica is still being
// removed or a new one is still starting: one change at a time.
struct RolloutStep {
  int remove = -1;  // replica index to remove, or -1
  int add = -1;     // replica index to add on the target spec, or -1
  std::string why;  // the event's message
};
RolloutStep NextRolloutStep(const std::vector<const dcufleet::v1::Deployment*>& replicas,
                            const dcufleet::v1::DeploymentSpec& target);

// Draining nodes (issue 20: a batch job nears its end). Make before break:
// a replica on a draining node keeps serving until a replacement placed
// elsewhere (the scheduler skips draining nodes) is Ready; then it goes.
// One change at a time per deployment:
// - a replica is still being removed: wait;
// - a replica on a draining node that is not Ready serves nobody: it goes
//   now (its replacement comes next);
// - no replacement yet (N live): one is added;
// - a replacement is live (N+1): once the replicas off draining nodes that
//   are Ready are enough to lose one of those on them, it is taken out of
//   the gateway's rotation (unserved: requests in flight finish, new ones go
//   elsewhere) and removed `serving_drain` later; until then (the
//   replacement starts, or finds no room) the old one serves, and the
//   agent's deadline ends it (its node then goes Lost, as any);
// - nothing is on a draining node any more, but more than N live (a
//   replacement and the replica it was meant for, rescheduled after its
//   node left): the worst goes (ReplicasToRemove);
// - otherwise done.
struct EvacuationStep {
  int unserve = -1;  // replica index to take out of rotation, or -1
  int remove = -1;   // replica index to remove, or -1
  int add = -1;      // replica index to add (same spec), or -1
  std::string why;   // the event's message
  bool done = false; // nothing of this deployment is on a draining node
};
// `draining`: the names of the nodes that drain.
EvacuationStep NextEvacuationStep(const std::vector<const dcufleet::v1::Deployment*>& replicas,
                                  const std::set<std::string>& draining, int64_t now_ms,
                                  absl::Duration serving_drain);

}  // namespace dcu::controller
