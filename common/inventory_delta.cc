#include "common/inventory_delta.h"

#include <bit>
#include <iterator>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/str_cat.h"

namespace dcu::common {
namespace {

// The eight memory readings of a device that move between reports, in
// MovingFigures' slot order (node.proto): the one list every form below is
// written from.
#define DCU_FOR_EACH_READING(X) \
  X(host_used) X(host_free) X(device_free) X(schedulable_free) X(unreclaimed) X(holders_vram) X(total) X(device_total)

struct FigureSlot {
  const char* name;
  bool (dcufleet::v1::Device::*has)() const;
  const dcufleet::v1::MemoryReading& (dcufleet::v1::Device::*get)() const;
  dcufleet::v1::MemoryReading* (dcufleet::v1::Device::*mutable_reading)();
  void (dcufleet::v1::Device::*clear)();
};

#define DCU_FIGURE_SLOT(field)                                                            \
  FigureSlot{#field, &dcufleet::v1::Device::has_##field, &dcufleet::v1::Device::field,   \
             &dcufleet::v1::Device::mutable_##field, &dcufleet::v1::Device::clear_##field},
const FigureSlot kSlots[] = {DCU_FOR_EACH_READING(DCU_FIGURE_SLOT)};
#undef DCU_FIGURE_SLOT
static_assert(std::size(kSlots) == kFigureSlots, "MovingFigures has a slot per moving reading");

void ClearMoving(dcufleet::v1::Device* d) {
  for (const FigureSlot& slot : kSlots) (d->*slot.clear)();
  d->clear_unreclaimed_bytes();
}

// The position in inventory.devices() of the device a delta's entry
// `position` names (`index`): by position first (the agent lists devices in
// the inventory's order), by index when that fails; -1 when it has none.
int DevicePosition(const dcufleet::v1::NodeInventory& inventory, int position, int32_t index) {
  if (position < inventory.devices_size() && inventory.devices(position).index() == index) return position;
  for (int i = 0; i < inventory.devices_size(); ++i) {
    if (inventory.devices(i).index() == index) return i;
  }
  return -1;
}

// Whether a reading changes in what a reader acts on (not its read time).
bool ReadingMoved(bool had, const dcufleet::v1::MemoryReading& held, bool has,
                  const dcufleet::v1::MemoryReading& now) {
  if (had != has) return true;
  return has && (held.bytes() != now.bytes() || held.valid() != now.valid() || held.source() != now.source());
}

// A delta checked against the inventory held: the device each entry
// belongs to (its position in inventory.devices()), and whether applying it
// moves a figure a reader acts on.
struct Resolved {
  std::vector<int> devices;
  bool moved = false;
};

absl::StatusOr<Resolved> ResolveDeviceMemory(const dcufleet::v1::NodeStatus& delta,
                                             const dcufleet::v1::NodeInventory& inventory) {
  Resolved r;
  r.devices.reserve(delta.device_memory_size());
  for (int i = 0; i < delta.device_memory_size(); ++i) {
    const dcufleet::v1::DeviceMemory& m = delta.device_memory(i);
    const int at = DevicePosition(inventory, i, m.index());
    if (at < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("status.device_memory[", i, "].index: device ", m.index(),
                       " is not in the node's inventory (", inventory.devices_size(), " devices)"));
    }
    const dcufleet::v1::Device& d = inventory.devices(at);
#define DCU_READING_MOVED(field) r.moved |= ReadingMoved(d.has_##field(), d.field(), m.has_##field(), m.field());
    DCU_FOR_EACH_READING(DCU_READING_MOVED)
#undef DCU_READING_MOVED
    r.moved |= d.unreclaimed_bytes() != m.unreclaimed_bytes();
    r.devices.push_back(at);
  }
  return r;
}

void WriteDeviceMemory(const dcufleet::v1::NodeStatus& delta, const Resolved& r,
                       dcufleet::v1::NodeInventory* inventory) {
  for (int i = 0; i < delta.device_memory_size(); ++i) {
    const dcufleet::v1::DeviceMemory& m = delta.device_memory(i);
    dcufleet::v1::Device* d = inventory->mutable_devices(r.devices[i]);
#define DCU_COPY_READING(field)        \
  if (m.has_##field()) {               \
    *d->mutable_##field() = m.field(); \
  } else {                             \
    d->clear_##field();                \
  }
    DCU_FOR_EACH_READING(DCU_COPY_READING)
#undef DCU_COPY_READING
    d->set_unreclaimed_bytes(m.unreclaimed_bytes());
  }
}

absl::StatusOr<Resolved> ResolveFigures(const dcufleet::v1::NodeStatus& delta,
                                        const dcufleet::v1::NodeInventory& inventory) {
  constexpr uint32_t kAllSlots = (1u << kFigureSlots) - 1;
  const dcufleet::v1::MovingFigures& f = delta.figures();
  const int n = f.index_size();
  Resolved r;
  r.devices.reserve(n);
  if (f.present_size() != n || f.valid_size() != n || f.unreclaimed_bytes_size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "status.figures: the per-device columns differ in length (index ", n, ", present ", f.present_size(),
        ", valid ", f.valid_size(), ", unreclaimed_bytes ", f.unreclaimed_bytes_size(), ")"));
  }
  int figures = 0;
  for (int i = 0; i < n; ++i) {
    const int at = DevicePosition(inventory, i, f.index(i));
    if (at < 0) {
      return absl::InvalidArgumentError(absl::StrCat("status.figures.index[", i, "]: device ", f.index(i),
                                                     " is not in the node's inventory (",
                                                     inventory.devices_size(), " devices)"));
    }
    if ((f.present(i) & ~kAllSlots) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("status.figures.present[", i, "]: 0x", absl::Hex(f.present(i)),
                                                     " names slots beyond the ", kFigureSlots, " there are"));
    }
    if ((f.valid(i) & ~f.present(i)) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("status.figures.valid[", i, "]: 0x", absl::Hex(f.valid(i)),
                                                     " marks slots that are not present (0x",
                                                     absl::Hex(f.present(i)), ")"));
    }
    figures += std::popcount(f.present(i));
    r.devices.push_back(at);
  }
  if (f.bytes_size() != figures) {
    return absl::InvalidArgumentError(
        absl::StrCat("status.figures.bytes: ", f.bytes_size(), " figures for ", figures, " present slots"));
  }
  if (f.read_at_offset_ms_size() != 0 && f.read_at_offset_ms_size() != figures) {
    return absl::InvalidArgumentError(absl::StrCat("status.figures.read_at_offset_ms: ", f.read_at_offset_ms_size(),
                                                   " offsets for ", figures, " present slots"));
  }
  for (int k = 0; k < f.read_at_offset_ms_size(); ++k) {
    int64_t at = 0;
    if (__builtin_add_overflow(delta.collected_at_ms(), f.read_at_offset_ms(k), &at)) {
      return absl::InvalidArgumentError(absl::StrCat("status.figures.read_at_offset_ms[", k, "]: ",
                                                     f.read_at_offset_ms(k), " from collected_at_ms ",
                                                     delta.collected_at_ms(), " is past the clock's range"));
    }
  }
  std::vector<uint32_t> named(n, 0);
  for (int j = 0; j < f.sources_size(); ++j) {
    const dcufleet::v1::FigureSource& source = f.sources(j);
    if (source.device() >= static_cast<uint32_t>(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("status.figures.sources[", j, "].device: ", source.device(), " of ", n, " devices"));
    }
    if (source.slot() >= static_cast<uint32_t>(kFigureSlots) ||
        (f.present(source.device()) & (1u << source.slot())) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("status.figures.sources[", j, "].slot: ", source.slot(), " is not a present slot"));
    }
    named[source.device()] |= 1u << source.slot();
    const dcufleet::v1::Device& d = inventory.devices(r.devices[source.device()]);
    // A reading that appears is a move anyway (below).
    if ((d.*kSlots[source.slot()].has)() && (d.*kSlots[source.slot()].get)().source() != source.source()) {
      r.moved = true;
    }
  }
  int k = 0;  // the present slot's position in bytes / read_at_offset_ms
  for (int i = 0; i < n; ++i) {
    const dcufleet::v1::Device& d = inventory.devices(r.devices[i]);
    for (int s = 0; s < kFigureSlots; ++s) {
      const uint32_t bit = 1u << s;
      const bool had = (d.*kSlots[s].has)();
      if ((f.present(i) & bit) == 0) {
        r.moved |= had;
        continue;
      }
      if (!had && (named[i] & bit) == 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("status.figures: ", kSlots[s].name, " of device ", f.index(i),
                         " keeps its previous source, and the controller holds no reading there"));
      }
      const dcufleet::v1::MemoryReading& held = (d.*kSlots[s].get)();
      r.moved |= !had || held.bytes() != f.bytes(k) || held.valid() != ((f.valid(i) & bit) != 0);
      ++k;
    }
    r.moved |= d.unreclaimed_bytes() != f.unreclaimed_bytes(i);
  }
  return r;
}

void WriteFigures(const dcufleet::v1::NodeStatus& delta, const Resolved& r, dcufleet::v1::NodeInventory* inventory) {
  const dcufleet::v1::MovingFigures& f = delta.figures();
  const int64_t collected = delta.collected_at_ms();
  const bool offsets = f.read_at_offset_ms_size() != 0;
  int k = 0;
  for (int i = 0; i < f.index_size(); ++i) {
    dcufleet::v1::Device* d = inventory->mutable_devices(r.devices[i]);
    const uint32_t present = f.present(i), valid = f.valid(i);
    for (int s = 0; s < kFigureSlots; ++s) {
      const uint32_t bit = 1u << s;
      if ((present & bit) == 0) {
        (d->*kSlots[s].clear)();
        continue;
      }
      dcufleet::v1::MemoryReading* reading = (d->*kSlots[s].mutable_reading)();
      reading->set_bytes(f.bytes(k));
      reading->set_valid((valid & bit) != 0);
      reading->set_read_at_ms(collected + (offsets ? f.read_at_offset_ms(k) : 0));
      ++k;
    }
    d->set_unreclaimed_bytes(f.unreclaimed_bytes(i));
  }
  for (const auto& source : f.sources()) {
    (inventory->mutable_devices(r.devices[source.device()])->*kSlots[source.slot()].mutable_reading)()->set_source(
        source.source());
  }
}

absl::StatusOr<Resolved> Resolve(const dcufleet::v1::NodeStatus& delta, const dcufleet::v1::NodeInventory& inventory) {
  if (delta.device_memory_size() > 0 && delta.has_figures()) {
    return absl::InvalidArgumentError(absl::StrCat("status: carries both device_memory (",
                                                   delta.device_memory_size(),
                                                   " devices) and figures; a report sends one form"));
  }
  return delta.has_figures() ? ResolveFigures(delta, inventory) : ResolveDeviceMemory(delta, inventory);
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
#define DCU_FILL_READING(field) \
  if (d.has_##field()) *m->mutable_##field() = d.field();
    DCU_FOR_EACH_READING(DCU_FILL_READING)
#undef DCU_FILL_READING
    m->set_unreclaimed_bytes(d.unreclaimed_bytes());
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

absl::StatusOr<bool> MovingFiguresMove(const dcufleet::v1::NodeStatus& delta,
                                       const dcufleet::v1::NodeInventory& inventory) {
  absl::StatusOr<Resolved> r = Resolve(delta, inventory);
  if (!r.ok()) return r.status();
  return r->moved;
}

absl::Status ApplyMovingFigures(const dcufleet::v1::NodeStatus& delta,
                                dcufleet::v1::NodeInventory* inventory, bool* moved) {
  // Every check before the first write: a refused delta changes nothing.
  absl::StatusOr<Resolved> r = Resolve(delta, *inventory);
  if (!r.ok()) return r.status();
  if (delta.has_figures()) {
    WriteFigures(delta, *r, inventory);
  } else {
    WriteDeviceMemory(delta, *r, inventory);
  }
  if (moved != nullptr) *moved = r->moved;
  inventory->set_collected_at_ms(delta.collected_at_ms());
  inventory->set_processes_scanned(delta.processes_scanned());
  *inventory->mutable_probe_log() = delta.probe_log();
  return absl::OkStatus();
}

void CompactFiguresWriter::Sent(const dcufleet::v1::NodeInventory& inventory) {
  last_.resize(inventory.devices_size());
  for (int i = 0; i < inventory.devices_size(); ++i) {
    const dcufleet::v1::Device& d = inventory.devices(i);
    DeviceSources& sources = last_[i];
    sources.index = d.index();
    sources.present = 0;
    for (int s = 0; s < kFigureSlots; ++s) {
      if (!(d.*kSlots[s].has)()) {
        sources.source[s].clear();
        continue;
      }
      sources.present |= 1u << s;
      sources.source[s] = (d.*kSlots[s].get)().source();
    }
  }
}

void CompactFiguresWriter::MakeCompactDelta(dcufleet::v1::NodeStatus* status) {
  if (!status->has_inventory()) return;
  const dcufleet::v1::NodeInventory& inventory = status->inventory();
  const int64_t collected = inventory.collected_at_ms();
  status->clear_device_memory();
  dcufleet::v1::MovingFigures* f = status->mutable_figures();
  f->Clear();
  bool all_at_collection = true;
  for (int i = 0; i < inventory.devices_size(); ++i) {
    const dcufleet::v1::Device& d = inventory.devices(i);
    // What the previous report said of this device: by position, else by index.
    const DeviceSources* before = nullptr;
    if (i < static_cast<int>(last_.size()) && last_[i].index == d.index()) {
      before = &last_[i];
    } else {
      for (const auto& candidate : last_) {
        if (candidate.index == d.index()) before = &candidate;
      }
    }
    uint32_t present = 0, valid = 0;
    for (int s = 0; s < kFigureSlots; ++s) {
      if (!(d.*kSlots[s].has)()) continue;
      const uint32_t bit = 1u << s;
      const dcufleet::v1::MemoryReading& r = (d.*kSlots[s].get)();
      present |= bit;
      if (r.valid()) valid |= bit;
      f->add_bytes(r.bytes());
      f->add_read_at_offset_ms(r.read_at_ms() - collected);
      if (r.read_at_ms() != collected) all_at_collection = false;
      if (before == nullptr || (before->present & bit) == 0 || before->source[s] != r.source()) {
        dcufleet::v1::FigureSource* source = f->add_sources();
        source->set_device(i);
        source->set_slot(s);
        source->set_source(r.source());
      }
    }
    f->add_index(d.index());
    f->add_present(present);
    f->add_valid(valid);
    f->add_unreclaimed_bytes(d.unreclaimed_bytes());
  }
  if (all_at_collection) f->clear_read_at_offset_ms();
  Sent(inventory);
  status->set_collected_at_ms(collected);
  status->set_processes_scanned(inventory.processes_scanned());
  *status->mutable_probe_log() = inventory.probe_log();
  status->clear_inventory();
}

#undef DCU_FOR_EACH_READING

}  // namespace dcu::common
