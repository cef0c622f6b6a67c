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
// before its last rollout (Deployment.previous_spec), at its current
// replica count. Exit 0 when the controller started it, 1 when there is
// no earlier spec, 3 unknown deployment.
int RunRolloutUndo(Client& client, const RolloutArgs& args, bool wait, std::ostream& out,
                   std::ostream& err);

// One revision of a deployment: its creation or a rollout (a new spec, a
// restart, an undo), from the event log.
struct RolloutRevision {
  int revision = 0;
  int64_t at_ms = 0;
  std::string change;
};
// The revisions of the incarnation born at `born_ms` among `events` (oldest
// first): its Created event and each RolloutStarted after it, numbered from
// 1; `complete` is false when the Created event is not among them (older
// than the events read), and the numbers then count from the first shown.
std::vector<RolloutRevision> RevisionsFromEvents(const dcufleet::v1::ListEventsResponse& events,
                                                 int64_t born_ms, bool* complete);
// kubectl rollout history: REVISION / AGE / CHANGE of one deployment, from
// its events. Exit 0, 3 unknown deployment.
int RunRolloutHistory(Client& client, const std::string& name, std::ostream& out, std::ostream& err);

}  // namespace dcu::dcuctl
