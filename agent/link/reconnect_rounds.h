#pragma once

// Which controller an agent dials next, and how long it sleeps first, when
// the link is down (issue 21: `dcu-agent --controller a,b,c`). Pure: no
// gRPC, no clock; ControllerLink::Run feeds it each dial's outcome and does
// what it says, and tests drive it directly.
//
// One round tries every address once before the back-off sleeps: a dead
// leader and two standbys are one failure, not three doublings (measured by
// bench/ha/churn.sh: per-address doubling kept agents away for 30 s after a
// 6 s takeover). A standby that names the leader is followed at once, unless
// that leader did not answer in this round (its lease has not run out yet:
// a takeover is under way); a round in which a standby answered ends in a
// short poll, not a doubled back-off.

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace dcu::agent {

class ReconnectRounds {
 public:
  // How long a round in which a standby answered sleeps.
  static constexpr absl::Duration kTakeoverPoll = absl::Seconds(1);

  struct Step {
    // Dial addresses()[next] now, or after `sleep` when it is not zero.
    size_t next = 0;
    absl::Duration sleep = absl::ZeroDuration();
    // The address that failed did not answer at all: give it a fresh
    // channel (gRPC's own reconnect timer, grown while it was dead, failed
    // the dial to a controller restarted there: 17 s in bench/ha/churn.sh).
    bool fresh_channel = false;
    // A standby named a leader that did not answer in this round.
    bool takeover_under_way = false;
    // Following a standby to the leader it named.
    bool redirected = false;
  };

  // `jitter` returns a factor in [0.5, 1] for each sleep (full jitter);
  // `addresses` must not be empty.
  ReconnectRounds(std::vector<std::string> addresses, absl::Duration initial_backoff,
                  absl::Duration max_backoff, std::function<double()> jitter);

  // The list, with any leader a standby named that was not in it.
  const std::vector<std::string>& addresses() const { return addresses_; }
  size_t current() const { return current_; }
  // The back-off the next round without a standby's answer sleeps (before
  // jitter).
  absl::Duration backoff() const { return backoff_; }

  // The dial of addresses()[current()] reached a controller that leads.
  void Connected();
  // It failed: `named_leader` is the leader a standby's answer named, ""
  // when nothing (or a controller naming itself) answered.
  Step Failed(const std::string& named_leader);
  // A stream that was up ended: on to the next address as after a failed
  // dial (a round's sleep once the list is through, so a controller that
  // drops every stream is not dialled in a tight loop), without marking
  // the address unreachable.
  Step Ended();

 private:
  // The next address; the round's sleep once every address was tried.
  void Advance(Step* step);

  std::vector<std::string> addresses_;
  const absl::Duration initial_backoff_;
  const absl::Duration max_backoff_;
  const std::function<double()> jitter_;
  absl::Duration backoff_;
  size_t current_ = 0;
  size_t tried_ = 0;
  size_t redirects_ = 0;
  std::set<std::string> unreachable_;
  bool standby_answered_ = false;
};

}  // namespace dcu::agent
