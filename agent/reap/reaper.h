#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "dcufleet/v1/node_truth.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

struct ReapOptions {
  // Report what would be done; send nothing.
  bool dry_run = false;
  // Also end holders dcufleet did not start (never the default: they may be
  // someone's work).
  bool include_unmanaged = false;
  // SIGTERM, then this long for a clean exit, then SIGKILL.
  absl::Duration grace = absl::Seconds(10);
  // How long to wait for SIGKILLed processes to disappear.
  absl::Duration kill_wait = absl::Seconds(5);
  absl::Duration poll_interval = absl::Milliseconds(20);
  // ReapNode: how long to keep measuring again while the vendor library
  // still lists a process that has ended. The NVIDIA driver gave an ended
  // process's 20 GiB back some 100 ms after it became a zombie on an H200
  // (tests/fixtures/nvidia-h200), so a measurement taken at once misses it.
  absl::Duration settle_timeout = absl::Seconds(5);
  // Where liveness and identity (start time) are checked before and after
  // each signal; the reaper acts on real pids, so this is the live /proc
  // even when the inventory was read from a fixture root.
  std::string proc_root = "/proc";
};

// Ends stale device holders: SIGTERM, grace, SIGKILL to leftovers (holders
// carrying the marker of an ended instance); to unmanaged holders only with
// include_unmanaged; never to managed ones. Zombies are not signalled (it
// would do nothing): they are reported with their parent, which alone can
// reap them. Before each signal the pid's start time is compared with the
// one the scan saw, so a reused pid is never hit.
//
// Pure library: it does not talk to the controller; every ReapAction is an
// event for the caller to forward.
class Reaper {
 public:
  explicit Reaper(const common::Clock* clock = nullptr)
      : clock_(clock ? clock : &common::RealClock::Get()) {}

  // `before` is an inventory with holders (CollectInventory). When
  // `reprobe` is given it is called after the signals (it should drop cached
  // device views, e.g. InventoryCollector::InvalidateDeviceView + Collect),
  // and the report carries memory before and after per device.
  dcufleet::v1::ReapReport Reap(const dcufleet::v1::NodeInventory& before, const ReapOptions& options,
                                const std::function<absl::StatusOr<dcufleet::v1::NodeInventory>()>& reprobe = nullptr);

 private:
  const common::Clock* clock_;
};

}  // namespace dcu::agent
