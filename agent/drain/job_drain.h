#pragma once

// When a dcu-agent inside a batch job drains, and when it leaves (issue 20).
// The one home of that decision; main.cc asks it every tick and does what
// it says (reports the drain, says Goodbye, stops instances).
//
// A job ends at its time limit (the allocation's end time) or when Slurm
// signals it (scancel, preemption: SIGTERM, then SIGKILL after KillWait,
// 30 s by default). Loading a large model takes minutes, so a replacement
// can only be ready in time when the drain starts well before the end:
// `drain_before` ahead of the time limit. A SIGTERM leaves `term_grace`
// (0 by default: Slurm's KillWait is too short to move a replica, so the
// agent leaves at once and its replicas are rescheduled as on a lost node).

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

struct JobDrainOptions {
  // Drain this long before the job's end time; at most half the time the
  // job had left when the agent started (a job shorter than twice this
  // still serves for its first half instead of draining from the start).
  absl::Duration drain_before = absl::Minutes(10);
  // Whatever still runs is stopped this long before the end time (a clean
  // stop, before Slurm's SIGTERM/SIGKILL).
  absl::Duration stop_margin = absl::Seconds(30);
  // After SIGTERM, how long the agent still waits for its replicas to move.
  absl::Duration term_grace = absl::ZeroDuration();
};

class JobDrain {
 public:
  enum class Verdict {
    kServe,  // not draining
    kDrain,  // draining: report it, keep serving what is not moved yet
    kLeave,  // say Goodbye, stop every instance, exit
  };

  // `started`: when the agent started (about when the job did).
  JobDrain(dcufleet::v1::NodeAllocation allocation, JobDrainOptions options, absl::Time started);

  // `terminated`: the agent got SIGTERM (at any time since it started);
  // `holds_nothing`: no instance runs or is assigned. Call it every tick.
  Verdict Check(absl::Time now, bool terminated, bool holds_nothing);

  // The drain once it began (reported in every Hello and NodeStatus).
  const std::optional<dcufleet::v1::NodeDrain>& drain() const { return drain_; }
  // Why the agent leaves (the Goodbye's reason), once Check said kLeave.
  const std::string& leave_reason() const { return leave_reason_; }

 private:
  void Begin(absl::Time now, absl::Time deadline, std::string reason);

  const dcufleet::v1::NodeAllocation allocation_;
  const JobDrainOptions options_;
  // options_.drain_before, capped (see JobDrainOptions).
  absl::Duration drain_before_;
  std::optional<dcufleet::v1::NodeDrain> drain_;
  bool saw_term_ = false;
  std::string leave_reason_;
};

}  // namespace dcu::agent
