#include "agent/link/reconnect_rounds.h"

#include <algorithm>

namespace dcu::agent {

ReconnectRounds::ReconnectRounds(std::vector<std::string> addresses, absl::Duration initial_backoff,
                                 absl::Duration max_backoff, std::function<double()> jitter)
    : addresses_(std::move(addresses)),
      initial_backoff_(initial_backoff),
      max_backoff_(max_backoff),
      jitter_(std::move(jitter)),
      backoff_(initial_backoff) {
  if (addresses_.empty()) addresses_.push_back("");
}

void ReconnectRounds::Connected() {
  backoff_ = initial_backoff_;
  tried_ = 0;
  redirects_ = 0;
  unreachable_.clear();
  standby_answered_ = false;
}

ReconnectRounds::Step ReconnectRounds::Failed(const std::string& named_leader) {
  Step step;
  const std::string address = addresses_[current_];
  if (!named_leader.empty() && named_leader != address) {
    standby_answered_ = true;
    // At most one redirect per address (and one more) in a round: two
    // standbys naming each other's stale leader cannot loop.
    if (!unreachable_.count(named_leader) && redirects_ < addresses_.size() + 1) {
      ++redirects_;
      auto known = std::find(addresses_.begin(), addresses_.end(), named_leader);
      if (known == addresses_.end()) known = addresses_.insert(addresses_.end(), named_leader);
      current_ = static_cast<size_t>(known - addresses_.begin());
      step.next = current_;
      step.redirected = true;
      return step;
    }
    step.takeover_under_way = true;
  } else {
    unreachable_.insert(address);
    step.fresh_channel = true;
  }
  Advance(&step);
  return step;
}

ReconnectRounds::Step ReconnectRounds::Ended() {
  Step step;
  Advance(&step);
  return step;
}

void ReconnectRounds::Advance(Step* out) {
  Step& step = *out;
  // The next address (with one address, the same again); the rest of the
  // list before a sleep.
  current_ = (current_ + 1) % addresses_.size();
  step.next = current_;
  if (++tried_ < addresses_.size()) return;
  tried_ = 0;
  redirects_ = 0;
  unreachable_.clear();
  const double f = std::clamp(jitter_ ? jitter_() : 1.0, 0.5, 1.0);
  step.sleep = (standby_answered_ ? kTakeoverPoll : backoff_) * f;
  if (!standby_answered_) backoff_ = std::min(backoff_ * 2, max_backoff_);
  standby_answered_ = false;
}

}  // namespace dcu::agent
