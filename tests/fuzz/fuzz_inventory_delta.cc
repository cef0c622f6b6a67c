// Issue 22's reports without the inventory, end to end: an agent's
// inventory whose memory figures move from report to report (bytes,
// validity, sources, readings that appear and disappear, read times,
// unreclaimed bytes, collection time), turned into reports the way the
// agent makes them (MakeDelta, or CompactFiguresWriter when the controller
// takes compact figures) and applied the way the controller applies them
// (ApplyMovingFigures to the inventory it holds from the Hello). After
// every report the controller must hold exactly the agent's inventory, and
// the digest must not have moved (the figures are left out of it). A
// difference aborts with both inventories.
//
// Input: byte 0 the number of devices (1-8), byte 1 the form (even: plain
// device_memory, odd: compact figures); then per report a byte for the
// collection time and, for every device and reading slot, a byte saying
// what happens to that reading.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include "common/inventory_delta.h"
#include "dcufleet/v1/node.pb.h"

namespace {

using dcufleet::v1::Device;
using dcufleet::v1::MemoryReading;

// The reading slots in MovingFigures' order (node.proto).
struct SlotFields {
  MemoryReading* (Device::*mutable_reading)();
  bool (Device::*has)() const;
  void (Device::*clear)();
};
#define DCU_SLOT(f) SlotFields{&Device::mutable_##f, &Device::has_##f, &Device::clear_##f}
const SlotFields kSlots[] = {DCU_SLOT(host_used),   DCU_SLOT(host_free),    DCU_SLOT(device_free),
                             DCU_SLOT(schedulable_free), DCU_SLOT(unreclaimed), DCU_SLOT(holders_vram),
                             DCU_SLOT(total),       DCU_SLOT(device_total)};
#undef DCU_SLOT
static_assert(std::size(kSlots) == dcu::common::kFigureSlots);

MemoryReading* Slot(Device* d, int s) { return (d->*kSlots[s].mutable_reading)(); }
bool Has(const Device& d, int s) { return (d.*kSlots[s].has)(); }
void Clear(Device* d, int s) { (d->*kSlots[s].clear)(); }

const std::string& SourceOf(uint8_t b) {
  static const std::string kSources[] = {"", "hip:hipMemGetInfo", "rocm_smi:rsmi_dev_memory_usage_get",
                                         "derived:total-host_used", std::string(300, 'x')};
  return kSources[b % 5];
}

[[noreturn]] void Differ(const char* what, int report, const dcufleet::v1::NodeInventory& agent,
                         const dcufleet::v1::NodeInventory& held) {
  std::fprintf(stderr, "report %d: %s\n--- agent ---\n%s--- controller ---\n%s", report, what,
               agent.DebugString().c_str(), held.DebugString().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int devices = 1 + data[0] % 8;
  const bool compact = data[1] % 2 == 1;
  size_t at = 2;

  dcufleet::v1::NodeInventory agent;
  agent.set_hostname("node-0");
  agent.set_collected_at_ms(1783000000000);
  for (int i = 0; i < devices; ++i) {
    Device* d = agent.add_devices();
    d->set_index(i);
    d->set_arch("gfx928");
    for (int s = 0; s < dcu::common::kFigureSlots; ++s) {
      MemoryReading* r = Slot(d, s);
      r->set_bytes((int64_t{64} << 30) - s * (int64_t{1} << 28));
      r->set_source(SourceOf(static_cast<uint8_t>(s)));
      r->set_valid(true);
      r->set_read_at_ms(agent.collected_at_ms());
    }
  }
  const uint64_t digest = dcu::common::InventoryDigest(agent);
  // The controller holds what the Hello carried; the writer knows it was sent.
  dcufleet::v1::NodeInventory held = agent;
  dcu::common::CompactFiguresWriter writer;
  writer.Sent(agent);

  int report = 0;
  while (at < size) {
    ++report;
    const uint8_t clock = data[at++];
    agent.set_collected_at_ms(agent.collected_at_ms() + 1000 + clock);
    agent.set_processes_scanned(clock);
    agent.clear_probe_log();
    if (clock % 3 == 0) agent.add_probe_log("hip: dcu-memprobe " + std::to_string(devices) + " devices");
    for (int i = 0; i < devices && at < size; ++i) {
      Device* d = agent.mutable_devices(i);
      for (int s = 0; s < dcu::common::kFigureSlots && at < size; ++s) {
        const uint8_t b = data[at++];
        const bool has = Has(*d, s);
        switch (b % 8) {
          case 0:  // a new read of the same figure
            if (has) Slot(d, s)->set_read_at_ms(agent.collected_at_ms());
            break;
          case 1:
            if (has) Slot(d, s)->set_bytes(Slot(d, s)->bytes() + (int64_t{b} << 20));
            break;
          case 2:
            if (has) Slot(d, s)->set_valid(!Slot(d, s)->valid());
            break;
          case 3:
            if (has) Slot(d, s)->set_source(SourceOf(b >> 3));
            break;
          case 4:  // the reading is gone (a probe that no longer answers)
            Clear(d, s);
            break;
          case 5:  // a reading (back) with whatever source
            if (!has) {
              MemoryReading* r = Slot(d, s);
              r->set_bytes(int64_t{b} << 24);
              r->set_source(SourceOf(b >> 3));
              r->set_read_at_ms(agent.collected_at_ms());
            }
            break;
          case 6:  // read earlier than the collection
            if (has) Slot(d, s)->set_read_at_ms(agent.collected_at_ms() - (b >> 3) * 250);
            break;
          default:
            d->set_unreclaimed_bytes(d->unreclaimed_bytes() + b);
            break;
        }
      }
    }
    if (dcu::common::InventoryDigest(agent) != digest) Differ("the digest moved with the figures", report, agent, held);
    dcufleet::v1::NodeStatus status;
    *status.mutable_inventory() = agent;
    status.set_inventory_digest(digest);
    if (compact) {
      writer.MakeCompactDelta(&status);
    } else {
      dcu::common::MakeDelta(&status);
    }
    absl::Status applied = dcu::common::ApplyMovingFigures(status, &held);
    if (!applied.ok()) Differ(std::string(applied.message()).c_str(), report, agent, held);
    if (held.SerializeAsString() != agent.SerializeAsString()) {
      Differ("the controller's inventory is not the agent's", report, agent, held);
    }
  }
  return 0;
}
