#pragma once

// dcuctl top nodes [NAME] (kubectl top's words, for device memory): how much
// of each node's device memory is in use, by both views -- the device's own
// (what the runtime says is free on it) and the SMI's -- and how much is
// held with no live process (unreclaimed: the stranded memory of the
// incident reports). One row per node, or per device of one node.

#include <ostream>
#include <string>
#include <vector>

#include "dcuctl/client.h"
#include "absl/status/statusor.h"
#include "dcuctl/output.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::dcuctl {

// One node's (or one device's) memory in use. A view whose reading is not
// valid on some device is left out of that sum and counted in `*_missing`.
struct MemoryUse {
  int devices = 0;
  int64_t total = 0;
  int64_t used_device_view = 0;
  // The total of the devices whose own view was read: MEMORY%'s base.
  int64_t total_device_view = 0;
  int device_view_missing = 0;
  int64_t used_smi_view = 0;
  int smi_view_missing = 0;
  int64_t unreclaimed = 0;
  int holders = 0;
};
MemoryUse MemoryUseOf(const dcufleet::v1::NodeInventory& inventory);
MemoryUse MemoryUseOf(const dcufleet::v1::Device& device);

// How `top` orders rows: by name (kubectl's default), or by what is used
// or stranded, most first.
enum class TopSort { kName, kMemory, kUnreclaimed };
// "memory", "unreclaimed", "" (name); anything else: an error naming them.
absl::StatusOr<TopSort> ParseTopSort(const std::string& text);

// NAME, DEVICES, MEMORY(DEVICE), MEMORY%, MEMORY(SMI), UNRECLAIMED,
// HOLDERS; a node that is not Ready shows <unknown> figures, as kubectl top
// shows a node without metrics.
Table TopNodesTable(const std::vector<dcufleet::v1::NodeView>& nodes, TopSort sort);
// The same per device of one node (IDX and ARCH first).
Table TopDevicesTable(const dcufleet::v1::NodeView& node, TopSort sort);

// Exit 0; 3 unknown node; 2 a format other than the table (the figures are
// in `get nodes -o json`) or an unknown --sort-by.
int RunTopNodes(Client& client, const std::string& name, const std::string& sort_by,
                std::ostream& out, std::ostream& err);

}  // namespace dcu::dcuctl
