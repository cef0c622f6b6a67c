#include "agent/drain/job_drain.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dcu::agent {

namespace {

std::string Utc(absl::Time t) { return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone()); }

}  // namespace

JobDrain::JobDrain(dcufleet::v1::NodeAllocation allocation, JobDrainOptions options,
                   absl::Time started)
    : allocation_(std::move(allocation)), options_(options), drain_before_(options.drain_before) {
  if (allocation_.end_time_ms() > 0) {
    const absl::Duration had = absl::FromUnixMillis(allocation_.end_time_ms()) - started;
    drain_before_ = std::max(absl::ZeroDuration(), std::min(drain_before_, had / 2));
  }
}

void JobDrain::Begin(absl::Time now, absl::Time deadline, std::string reason) {
  dcufleet::v1::NodeDrain d;
  d.set_reason(std::move(reason));
  d.set_since_ms(absl::ToUnixMillis(now));
  d.set_deadline_ms(absl::ToUnixMillis(std::max(now, deadline)));
  drain_ = std::move(d);
}

JobDrain::Verdict JobDrain::Check(absl::Time now, bool terminated, bool holds_nothing) {
  if (!leave_reason_.empty()) return Verdict::kLeave;
  const std::string job = absl::StrCat("slurm job '", allocation_.job_id(), "'");
  if (terminated && !saw_term_) {
    saw_term_ = true;
    const absl::Time deadline = now + options_.term_grace;
    if (!drain_) {
      Begin(now, deadline, absl::StrCat(job, " was told to end (SIGTERM)"));
    } else if (deadline < absl::FromUnixMillis(drain_->deadline_ms())) {
      // Draining for the time limit already: the signal only brings the end forward.
      drain_->set_deadline_ms(absl::ToUnixMillis(deadline));
      drain_->set_reason(absl::StrCat(drain_->reason(), "; then told to end (SIGTERM)"));
    }
  }
  if (!drain_ && allocation_.end_time_ms() > 0) {
    const absl::Time end = absl::FromUnixMillis(allocation_.end_time_ms());
    if (now >= end - drain_before_) {
      Begin(now, end - options_.stop_margin,
            absl::StrCat(job, " ends at ", Utc(end), " (time limit)"));
    }
  }
  if (!drain_) return Verdict::kServe;
  if (holds_nothing) {
    leave_reason_ = absl::StrCat(drain_->reason(), ": drained, nothing runs here any more");
  } else if (now >= absl::FromUnixMillis(drain_->deadline_ms())) {
    leave_reason_ = absl::StrCat(drain_->reason(), ": drain deadline reached, instances stopped");
  }
  return leave_reason_.empty() ? Verdict::kDrain : Verdict::kLeave;
}

}  // namespace dcu::agent
