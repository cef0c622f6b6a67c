#include "common/inventory_delta.h"

#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/str_cat.h"

namespace dcu::common {
namespace {

void ClearMoving(dcufleet::v1::Device* d) {
  d->clear_host_used();
  d->clear_host_free();
  d->clear_device_free();
  d->clear_schedulable_free();
  d->clear_unreclaimed_bytes();
  d->clear_unreclaimed();
  d->clear_holders_vram();
  d->clear_total();
  d->clear_device_total();
}

}  // namespace

uint64_t InventoryDigest(const dcufleet::v1::NodeInventory& inventory) {
  dcufleet::v1::NodeInventory stable = inventory;
  stable.clear_collected_at_ms();
  stable.clear_processes_scanned();
  stable.clear_probe_log();
  for (auto& d : *stable.mutable_devices()) ClearMoving(&d);
  std::string bytes;
  {
    // Deterministic: the same inventory gives the same bytes (map order).
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    stable.SerializeToCodedStream(&coded);
  }
  // FNV-1a, 64 bits: a change detector between one agent and the
  // controller, not a defence (the agent may send any inventory anyway).
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h == 0 ? 1 : h;
}

void FillMovingFigures(const dcufleet::v1::NodeInventory& inventory,
                       dcufleet::v1::NodeStatus* status) {
  status->clear_device_memory();
  for (const auto& d : inventory.devices()) {
    dcufleet::v1::DeviceMemory* m = status->add_device_memory();
    m->set_index(d.index());
    if (d.has_host_used()) *m->mutable_host_used() = d.host_used();
    if (d.has_host_free()) *m->mutable_host_free() = d.host_free();
    if (d.has_device_free()) *m->mutable_device_free() = d.device_free();
    if (d.has_schedulable_free()) *m->mutable_schedulable_free() = d.schedulable_free();
    m->set_unreclaimed_bytes(d.unreclaimed_bytes());
    if (d.has_unreclaimed()) *m->mutable_unreclaimed() = d.unreclaimed();
    if (d.has_holders_vram()) *m->mutable_holders_vram() = d.holders_vram();
    if (d.has_total()) *m->mutable_total() = d.total();
    if (d.has_device_total()) *m->mutable_device_total() = d.device_total();
  }
  status->set_collected_at_ms(inventory.collected_at_ms());
  status->set_processes_scanned(inventory.processes_scanned());
  *status->mutable_probe_log() = inventory.probe_log();
}

void MakeDelta(dcufleet::v1::NodeStatus* status) {
  if (!status->has_inventory()) return;
  FillMovingFigures(status->inventory(), status);
  status->clear_inventory();
}

absl::Status ApplyMovingFigures(const dcufleet::v1::NodeStatus& delta,
                                dcufleet::v1::NodeInventory* inventory) {
  // Devices by position first (the agent lists them in the same order as
  // in the inventory the digest names), by index when that fails.
  std::vector<dcufleet::v1::Device*> targets;
  targets.reserve(delta.device_memory_size());
  for (int i = 0; i < delta.device_memory_size(); ++i) {
    const int index = delta.device_memory(i).index();
    dcufleet::v1::Device* d = nullptr;
    if (i < inventory->devices_size() && inventory->devices(i).index() == index) {
      d = inventory->mutable_devices(i);
    } else {
      for (auto& candidate : *inventory->mutable_devices()) {
        if (candidate.index() == index) d = &candidate;
      }
    }
    if (d == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("status.device_memory[", i, "].index: device ", index,
                       " is not in the node's inventory (", inventory->devices_size(), " devices)"));
    }
    targets.push_back(d);
  }
  for (int i = 0; i < delta.device_memory_size(); ++i) {
    const dcufleet::v1::DeviceMemory& m = delta.device_memory(i);
    dcufleet::v1::Device* d = targets[i];
#define DCU_COPY_READING(field)      \
  if (m.has_##field()) {             \
    *d->mutable_##field() = m.field(); \
  } else {                           \
    d->clear_##field();              \
  }
    DCU_COPY_READING(host_used)
    DCU_COPY_READING(host_free)
    DCU_COPY_READING(device_free)
    DCU_COPY_READING(schedulable_free)
    DCU_COPY_READING(unreclaimed)
    DCU_COPY_READING(holders_vram)
    DCU_COPY_READING(total)
    DCU_COPY_READING(device_total)
#undef DCU_COPY_READING
    d->set_unreclaimed_bytes(m.unreclaimed_bytes());
  }
  inventory->set_collected_at_ms(delta.collected_at_ms());
  inventory->set_processes_scanned(delta.processes_scanned());
  *inventory->mutable_probe_log() = delta.probe_log();
  return absl::OkStatus();
}

}  // namespace dcu::common
