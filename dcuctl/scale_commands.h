#pragma once

// dcuctl scale deployment NAME --replicas N, and dcuctl rollout status
// deployment/NAME (kubectl's words): replicas of one deployment.

#include <ostream>
#include <string>
#include <vector>

#include "dcuctl/client.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::dcuctl {

struct RolloutArgs {
  std::string name;
  // Seconds to wait before giving up (exit 1); 0: forever.
  double timeout_s = 600;
};

// Exit 0 when the controller took the new count (and, with `wait`, when the
// rollout finished), 3 unknown deployment, 2 a refused count.
int RunScale(Client& client, const std::string& name, int replicas, bool wait, double timeout_s,
             std::ostream& out, std::ostream& err);
// Waits until every desired replica is Ready, printing kubectl's progress
// lines: exit 0 rolled out, 5 a replica cannot be scheduled, 6 a replica
// failed for good, 1 timed out.
int RunRolloutStatus(Client& client, const RolloutArgs& args, std::ostream& out,
                     std::ostream& err);
// kubectl rollout restart: every replica replaced, one at a time, on the
// spec it has (a new DeploymentSpec.restarted_at_ms). Exit 0 when the
// controller started it, 3 unknown deployment, 4 unreachable; the rollout
// itself is followed with RunRolloutStatus (`wait`: at once).
int RunRolloutRestart(Client& client, const RolloutArgs& args, bool wait, std::ostream& out,
                      std::ostream& err);
// kubectl rollout undo: a rollout back to the spec the deployment was on
// before its last rollout (Deployment.previous_spec), or with
// `to_revision` > 0 to that kept revision's spec (`--to-revision`), at its
// current replica count. Exit 0 when the controller started it (or the
// deployment already runs that revision), 1 when there is no earlier spec,
// 3 unknown deployment or revision.
int RunRolloutUndo(Client& client, const RolloutArgs& args, int to_revision, bool wait,
                   std::ostream& out, std::ostream& err);

// One revision of a deployment: its creation or a rollout (a new spec, a
// restart, an undo), as the controller keeps them (Deployment.
// current_revision, revision_history).
struct RolloutRevision {
  int revision = 0;
  int64_t at_ms = 0;
  std::string change;
  dcufleet::v1::DeploymentSpec spec;
  bool current = false;
};
// The revisions of `deployment` (as Get answers it), oldest first, the
// current one last with the deployment's spec. Empty when the controller
// keeps none (it predates revisions).
std::vector<RolloutRevision> RevisionsOf(const dcufleet::v1::Deployment& deployment);
// kubectl rollout history: REVISION / AGE / CHANGE of one deployment; with
// `revision` > 0 (`--revision`) that revision's spec. Exit 0, 3 unknown
// deployment or revision.
int RunRolloutHistory(Client& client, const std::string& name, int revision, std::ostream& out,
                      std::ostream& err);

}  // namespace dcu::dcuctl
