#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::common {

// Issue 22: a periodic report carries the inventory only when it changed.
// The one definition of "changed": the digest of the inventory with the
// figures that move on every read (memory by both views and their read
// times, collected_at_ms, processes_scanned, probe_log) left out. Those go
// in every report instead (NodeStatus.device_memory etc.). The agent
// computes the digest; the controller only compares it with the one it
// received with the last full inventory, so its value need only be stable
// within one agent process. Never 0 (0 means "no digest").
uint64_t InventoryDigest(const dcufleet::v1::NodeInventory& inventory);

// Fills `status`'s moving figures from `inventory` (device_memory,
// collected_at_ms, processes_scanned, probe_log).
void FillMovingFigures(const dcufleet::v1::NodeInventory& inventory,
                       dcufleet::v1::NodeStatus* status);

// Turns a full report into a delta: the moving figures in, the inventory out.
void MakeDelta(dcufleet::v1::NodeStatus* status);

// Applies a delta's moving figures, in either form (`device_memory` or
// `figures`), to the inventory the controller holds. Checks before
// it writes, so a refused delta leaves the inventory as it was:
// INVALID_ARGUMENT naming the entry for a device the inventory does not
// have, malformed MovingFigures, or a report carrying both forms;
// FAILED_PRECONDITION when a compact figure relies on a source the
// controller does not hold (the two sides disagree about the previous
// report; the full inventory mends it).
// `moved` (optional) is set when a figure a reader acts on changed: a
// reading's bytes, validity, source or presence, or unreclaimed_bytes; not
// when only read times, collected_at_ms, processes_scanned or probe_log
// did (they change with every report).
absl::Status ApplyMovingFigures(const dcufleet::v1::NodeStatus& delta,
                                dcufleet::v1::NodeInventory* inventory, bool* moved = nullptr);

// The checks of ApplyMovingFigures without the writes: whether applying
// `delta` to `inventory` would move a figure a reader acts on (see
// `moved` above), or why it would be refused.
absl::StatusOr<bool> MovingFiguresMove(const dcufleet::v1::NodeStatus& delta,
                                       const dcufleet::v1::NodeInventory& inventory);

// The reading slots of MovingFigures, in order (node.proto).
inline constexpr int kFigureSlots = 8;

// Issue 22: makes the compact form of one stream's reports. It remembers
// the sources the stream's previous report gave each device's readings, so
// that a report names a source only when it changed. One per stream: a new
// stream starts from its Hello's inventory.
class CompactFiguresWriter {
 public:
  // The stream's latest report carried this full inventory (the Hello, a
  // report with the inventory).
  void Sent(const dcufleet::v1::NodeInventory& inventory);

  // Turns a full report into a compact delta (the inventory out; the
  // moving figures in, as `figures`) and remembers its sources.
  void MakeCompactDelta(dcufleet::v1::NodeStatus* status);

 private:
  struct DeviceSources {
    int32_t index = 0;
    uint32_t present = 0;  // bit s: slot s was present in the last report
    std::array<std::string, kFigureSlots> source;
  };
  std::vector<DeviceSources> last_;  // in the inventory's device order
};

}  // namespace dcu::common
