// Issue 22: what one periodic report costs the controller to take, by the
// form it comes in: read off the wire (parsed from its bytes, as gRPC
// does) and applied to the inventory the controller holds, as
// FleetState::OnStatus does with nobody holding the view. The node is the
// synthetic fleet's (8 devices, every reading with its source, as the
// agent reports them; bench/common/synthetic_fleet.h).
//
//   full      the whole inventory in every report (an agent before issue 22)
//   expanded  digest + DeviceMemory: 8 x 8 MemoryReading, sources and all
//   compact   digest + DeviceFigures: packed figures, sources only on change
#include <string>
#include <vector>

#include "bench/common/synthetic_fleet.h"
#include "benchmark/benchmark.h"
#include "common/inventory_delta.h"
#include "dcufleet/v1/node.pb.h"

namespace {

enum class Form { kFull, kExpanded, kCompact };

// 16 consecutive reports of one node, free memory moving in each, as bytes
// on the wire; and the inventory the controller holds before the first.
struct Reports {
  dcufleet::v1::NodeInventory held;
  std::vector<std::string> wire;
};

Reports MakeReports(Form form) {
  Reports r;
  r.held = dcu::bench::MakeInventory(17, dcu::bench::FleetOptions(), 1700000000000);
  dcu::common::CompactFiguresWriter writer;
  writer.Sent(r.held);
  for (int i = 0; i < 16; ++i) {
    dcufleet::v1::NodeInventory now = r.held;
    const int64_t at = 1700000000000 + 1000 * (i + 1);
    now.set_collected_at_ms(at);
    for (auto& d : *now.mutable_devices()) {
      for (auto* m : {d.mutable_host_used(), d.mutable_host_free(), d.mutable_device_free(),
                      d.mutable_schedulable_free(), d.mutable_total(), d.mutable_device_total()}) {
        m->set_read_at_ms(at);
      }
      d.mutable_device_free()->set_bytes(d.device_free().bytes() - (i << 20));
      d.mutable_schedulable_free()->set_bytes(d.schedulable_free().bytes() - (i << 20));
    }
    dcufleet::v1::AgentMessage m;
    dcufleet::v1::NodeStatus* st = m.mutable_status();
    *st->mutable_inventory() = now;
    st->set_inventory_digest(dcu::common::InventoryDigest(now));
    st->set_sent_at_ms(at);
    if (form == Form::kExpanded) dcu::common::MakeDelta(st);
    if (form == Form::kCompact) writer.MakeCompactDelta(st);
    r.wire.push_back(m.SerializeAsString());
  }
  return r;
}

void BM_TakeReport(benchmark::State& state, Form form) {
  Reports reports = MakeReports(form);
  dcufleet::v1::NodeInventory held = reports.held;
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const std::string& wire = reports.wire[i++ % reports.wire.size()];
    dcufleet::v1::AgentMessage m;
    if (!m.ParseFromString(wire)) {
      state.SkipWithError("a report did not parse");
      return;
    }
    if (m.status().has_inventory()) {
      held.Swap(m.mutable_status()->mutable_inventory());
    } else if (!dcu::common::ApplyMovingFigures(m.status(), &held).ok()) {
      state.SkipWithError("a report did not apply");
      return;
    }
    bytes += wire.size();
    benchmark::DoNotOptimize(held);
  }
  state.counters["wire_bytes"] = static_cast<double>(reports.wire[0].size());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

BENCHMARK_CAPTURE(BM_TakeReport, full, Form::kFull)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TakeReport, expanded, Form::kExpanded)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TakeReport, compact, Form::kCompact)->Unit(benchmark::kMicrosecond);

}  // namespace
