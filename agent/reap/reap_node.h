#pragma once

#include "agent/inventory/inventory.h"
#include "agent/reap/reaper.h"
#include "dcufleet/v1/node_truth.pb.h"

namespace dcu::agent {

// Reap with before/after memory: CollectFull, Reaper::Reap,
// InvalidateDeviceView, CollectFull again until the driver no longer lists
// the ended holders (or options.settle_timeout). Every ReapAction in the
// report is an event to forward.
dcufleet::v1::ReapReport ReapNode(InventoryCollector* collector, const ReapOptions& options);

}  // namespace dcu::agent
