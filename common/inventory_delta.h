#pragma once

#include <cstdint>

#include "absl/status/status.h"
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

// Applies a delta's moving figures to the inventory the controller holds.
// INVALID_ARGUMENT naming the entry when the delta names a device the
// inventory does not have (then nothing is applied).
absl::Status ApplyMovingFigures(const dcufleet::v1::NodeStatus& delta,
                                dcufleet::v1::NodeInventory* inventory);

}  // namespace dcu::common
