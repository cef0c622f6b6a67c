#include "common/inventory_delta.h"

#include <functional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::common {
namespace {

dcufleet::v1::NodeInventory TwoDevices() {
  dcufleet::v1::NodeInventory inv;
  inv.set_hostname("node-a");
  for (int i = 0; i < 2; ++i) {
    auto* d = inv.add_devices();
    d->set_index(i);
    d->set_arch("gfx928");
    d->mutable_total()->set_bytes(64LL << 30);
    d->mutable_device_free()->set_bytes((60LL - i) << 30);
    d->mutable_device_free()->set_read_at_ms(1000);
    d->mutable_host_free()->set_bytes(61LL << 30);
    d->mutable_schedulable_free()->set_bytes((60LL - i) << 30);
  }
  inv.set_collected_at_ms(1000);
  inv.add_probe_log("procscan: KFD processes only, 10 scanned, 0 holder(s)");
  return inv;
}

TEST(InventoryDigest, IgnoresTheMovingFiguresOnly) {
  const dcufleet::v1::NodeInventory a = TwoDevices();
  dcufleet::v1::NodeInventory b = a;
  b.set_collected_at_ms(2000);
  b.set_processes_scanned(12);
  b.set_probe_log(0, "procscan: all processes, 2000 scanned, 0 holder(s)");
  b.mutable_devices(1)->mutable_device_free()->set_bytes(1);
  b.mutable_devices(1)->mutable_device_free()->set_read_at_ms(2000);
  b.mutable_devices(0)->mutable_total()->set_read_at_ms(2000);
  EXPECT_NE(InventoryDigest(a), 0u);
  EXPECT_EQ(InventoryDigest(a), InventoryDigest(b));

  dcufleet::v1::NodeInventory gone = a;
  gone.mutable_devices()->RemoveLast();
  EXPECT_NE(InventoryDigest(a), InventoryDigest(gone));
  dcufleet::v1::NodeInventory arch = a;
  arch.mutable_devices(0)->set_arch("gfx906");
  EXPECT_NE(InventoryDigest(a), InventoryDigest(arch));
  dcufleet::v1::NodeInventory model = a;
  model.add_models()->set_path("/models/Qwen3-8B");
  EXPECT_NE(InventoryDigest(a), InventoryDigest(model));
}

TEST(InventoryDelta, ADeltaAppliedToTheOldInventoryGivesTheNewOne) {
  const dcufleet::v1::NodeInventory before = TwoDevices();
  dcufleet::v1::NodeInventory now = before;
  now.set_collected_at_ms(5000);
  now.set_processes_scanned(7);
  now.set_probe_log(0, "procscan: all processes, 7 scanned, 1 holder(s)");
  now.mutable_devices(0)->mutable_device_free()->set_bytes(3LL << 30);
  now.mutable_devices(0)->mutable_device_free()->set_read_at_ms(5000);
  now.mutable_devices(1)->clear_host_free();
  now.mutable_devices(1)->set_unreclaimed_bytes(8LL << 30);

  dcufleet::v1::NodeStatus status;
  *status.mutable_inventory() = now;
  MakeDelta(&status);
  EXPECT_FALSE(status.has_inventory());
  EXPECT_EQ(status.device_memory_size(), 2);
  EXPECT_EQ(status.collected_at_ms(), 5000);

  dcufleet::v1::NodeInventory held = before;
  ASSERT_TRUE(ApplyMovingFigures(status, &held).ok());
  EXPECT_EQ(held.SerializeAsString(), now.SerializeAsString()) << held.DebugString();
}

TEST(InventoryDelta, ADeviceTheInventoryLacksIsRefusedAndNothingApplied) {
  dcufleet::v1::NodeInventory held = TwoDevices();
  dcufleet::v1::NodeStatus status;
  status.add_device_memory()->set_index(0);
  status.mutable_device_memory(0)->mutable_device_free()->set_bytes(1);
  status.add_device_memory()->set_index(9);
  status.set_collected_at_ms(99);
  absl::Status s = ApplyMovingFigures(status, &held);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), ::testing::HasSubstr("status.device_memory[1].index: device 9"));
  EXPECT_EQ(held.SerializeAsString(), TwoDevices().SerializeAsString());
}

// The agent's next read of TwoDevices(): figures moved, one source changed,
// one reading gone, one appeared, read times apart from the collection's.
dcufleet::v1::NodeInventory NextRead() {
  dcufleet::v1::NodeInventory now = TwoDevices();
  now.set_collected_at_ms(5000);
  now.set_processes_scanned(7);
  now.set_probe_log(0, "procscan: all processes, 7 scanned, 1 holder(s)");
  auto* d0 = now.mutable_devices(0);
  d0->mutable_device_free()->set_bytes(3LL << 30);
  d0->mutable_device_free()->set_read_at_ms(4990);
  d0->mutable_device_free()->set_source("hip:hipMemGetInfo");
  d0->mutable_device_free()->set_valid(true);
  auto* d1 = now.mutable_devices(1);
  d1->clear_host_free();
  d1->mutable_holders_vram()->set_bytes(20LL << 30);
  d1->mutable_holders_vram()->set_source("kfd:proc/*/vram_*");
  d1->mutable_holders_vram()->set_read_at_ms(5000);
  d1->set_unreclaimed_bytes(8LL << 30);
  return now;
}

dcufleet::v1::NodeInventory WithSources() {
  dcufleet::v1::NodeInventory inv = TwoDevices();
  for (auto& d : *inv.mutable_devices()) {
    d.mutable_total()->set_source("kfd:mem_banks/0/properties");
    d.mutable_device_free()->set_source("sysfs:mem_info_vram_used");
    d.mutable_host_free()->set_source("sysfs:mem_info_vram_used");
    d.mutable_schedulable_free()->set_source("min(host,device)");
  }
  return inv;
}

TEST(CompactFigures, AppliedToThePreviousReportTheyGiveTheNewOne) {
  const dcufleet::v1::NodeInventory before = WithSources();
  dcufleet::v1::NodeInventory now = NextRead();
  for (auto& d : *now.mutable_devices()) {
    d.mutable_total()->set_source("kfd:mem_banks/0/properties");
    if (d.index() != 0) d.mutable_device_free()->set_source("sysfs:mem_info_vram_used");
    if (d.has_host_free()) d.mutable_host_free()->set_source("sysfs:mem_info_vram_used");
    d.mutable_schedulable_free()->set_source("min(host,device)");
  }
  CompactFiguresWriter writer;
  writer.Sent(before);
  dcufleet::v1::NodeStatus status;
  *status.mutable_inventory() = now;
  writer.MakeCompactDelta(&status);
  EXPECT_FALSE(status.has_inventory());
  EXPECT_EQ(status.device_memory_size(), 0);
  ASSERT_TRUE(status.has_figures());
  ASSERT_EQ(status.figures().index_size(), 2);
  // Only what changed names its source: device 0's device_free (slot 2),
  // device 1's new holders_vram (slot 5).
  const auto& sources = status.figures().sources();
  ASSERT_EQ(sources.size(), 2);
  EXPECT_EQ(sources[0].device(), 0u);
  EXPECT_EQ(sources[0].slot(), 2u);
  EXPECT_EQ(sources[0].source(), "hip:hipMemGetInfo");
  EXPECT_EQ(sources[1].device(), 1u);
  EXPECT_EQ(sources[1].slot(), 5u);

  dcufleet::v1::NodeInventory held = before;
  ASSERT_TRUE(ApplyMovingFigures(status, &held).ok());
  EXPECT_EQ(held.SerializeAsString(), now.SerializeAsString()) << held.DebugString() << now.DebugString();

  // The next report, nothing moved but the clock: no source at all, every
  // read time at the collection's (no offsets sent), and the same result.
  dcufleet::v1::NodeInventory later = now;
  later.set_collected_at_ms(6000);
  for (auto& d : *later.mutable_devices()) {
    for (auto* r : {d.mutable_total(), d.mutable_device_free(), d.mutable_schedulable_free()}) r->set_read_at_ms(6000);
    if (d.has_host_free()) d.mutable_host_free()->set_read_at_ms(6000);
    if (d.has_holders_vram()) d.mutable_holders_vram()->set_read_at_ms(6000);
  }
  dcufleet::v1::NodeStatus next;
  *next.mutable_inventory() = later;
  writer.MakeCompactDelta(&next);
  EXPECT_EQ(next.figures().sources_size(), 0);
  EXPECT_EQ(next.figures().read_at_offset_ms_size(), 0);
  EXPECT_LT(next.ByteSizeLong(), status.ByteSizeLong());
  ASSERT_TRUE(ApplyMovingFigures(next, &held).ok());
  EXPECT_EQ(held.SerializeAsString(), later.SerializeAsString());
}

// Each malformed compact figure is refused with the field named, and the
// held inventory is left as it was.
TEST(CompactFigures, MalformedFiguresAreRefusedAndNothingApplied) {
  CompactFiguresWriter writer;
  writer.Sent(WithSources());
  dcufleet::v1::NodeStatus good;
  *good.mutable_inventory() = WithSources();
  good.mutable_inventory()->set_collected_at_ms(2000);
  writer.MakeCompactDelta(&good);
  ASSERT_EQ(good.figures().index_size(), 2);
  {
    dcufleet::v1::NodeInventory held = WithSources();
    ASSERT_TRUE(ApplyMovingFigures(good, &held).ok());
  }

  struct Case {
    const char* name;
    std::function<void(dcufleet::v1::NodeStatus*)> spoil;
    const char* names;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {"unknown device", [](auto* s) { s->mutable_figures()->set_index(1, 9); },
       "status.figures.index[1]: device 9", absl::StatusCode::kInvalidArgument},
      {"columns of different lengths", [](auto* s) { s->mutable_figures()->add_valid(0); },
       "status.figures: the per-device columns differ", absl::StatusCode::kInvalidArgument},
      {"slot beyond 8", [](auto* s) { s->mutable_figures()->set_present(0, 0x100 | s->figures().present(0)); },
       "status.figures.present[0]", absl::StatusCode::kInvalidArgument},
      {"a figure short", [](auto* s) { s->mutable_figures()->mutable_bytes()->RemoveLast(); },
       "status.figures.bytes", absl::StatusCode::kInvalidArgument},
      {"valid but absent", [](auto* s) { s->mutable_figures()->set_valid(1, 1u << 7); },
       "status.figures.valid[1]", absl::StatusCode::kInvalidArgument},
      {"offsets short", [](auto* s) { s->mutable_figures()->add_read_at_offset_ms(5); },
       "status.figures.read_at_offset_ms", absl::StatusCode::kInvalidArgument},
      {"source of an absent slot",
       [](auto* s) {
         auto* src = s->mutable_figures()->add_sources();
         src->set_slot(7);
         src->set_source("x");
       },
       "status.figures.sources[0].slot: 7", absl::StatusCode::kInvalidArgument},
      {"source slot out of range",
       [](auto* s) { s->mutable_figures()->add_sources()->set_slot(4000000000u); },
       "status.figures.sources[0].slot", absl::StatusCode::kInvalidArgument},
      {"source of a device not listed",
       [](auto* s) { s->mutable_figures()->add_sources()->set_device(2); },
       "status.figures.sources[0].device: 2 of 2", absl::StatusCode::kInvalidArgument},
      {"both forms", [](auto* s) { s->add_device_memory()->set_index(0); }, "carries both device_memory",
       absl::StatusCode::kInvalidArgument},
      {"a read time past the clock's range",
       [](auto* s) {
         s->set_collected_at_ms(INT64_MAX - 5);
         auto* offsets = s->mutable_figures()->mutable_read_at_offset_ms();
         offsets->Clear();
         for (int k = 0; k < s->figures().bytes_size(); ++k) offsets->Add(k == 3 ? 10 : 0);
       },
       "status.figures.read_at_offset_ms[3]", absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    dcufleet::v1::NodeStatus spoiled = good;
    c.spoil(&spoiled);
    dcufleet::v1::NodeInventory held = WithSources();
    absl::Status s = ApplyMovingFigures(spoiled, &held);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
    EXPECT_THAT(s.message(), ::testing::HasSubstr(c.names)) << c.name;
    EXPECT_EQ(held.SerializeAsString(), WithSources().SerializeAsString()) << c.name;
  }
}

// A compact figure that keeps a source the controller never got (the two
// sides disagree about the previous report) is not applied: the controller
// asks for the full inventory instead of showing a figure without source.
TEST(CompactFigures, AKeptSourceTheControllerLacksIsAFailedPrecondition) {
  dcufleet::v1::NodeInventory agent_side = WithSources();
  agent_side.mutable_devices(0)->mutable_holders_vram()->set_bytes(1);
  agent_side.mutable_devices(0)->mutable_holders_vram()->set_source("kfd:proc/*/vram_*");
  CompactFiguresWriter writer;
  writer.Sent(agent_side);  // the controller never applied this one
  dcufleet::v1::NodeStatus status;
  *status.mutable_inventory() = agent_side;
  writer.MakeCompactDelta(&status);
  dcufleet::v1::NodeInventory held = WithSources();
  absl::Status s = ApplyMovingFigures(status, &held);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), ::testing::HasSubstr("holders_vram of device 0"));
  EXPECT_EQ(held.SerializeAsString(), WithSources().SerializeAsString());
}

// `moved` says whether a figure a reader acts on changed; a report that
// only refreshes times (every report of an idle node) moves nothing. Both
// forms give the same answer.
TEST(MovingFigures, MovedOnlyWhenAFigureChangesNotItsTime) {
  const dcufleet::v1::NodeInventory before = WithSources();
  auto later = [](dcufleet::v1::NodeInventory inv) {
    inv.set_collected_at_ms(9000);
    inv.set_processes_scanned(99);
    for (auto& d : *inv.mutable_devices()) d.mutable_device_free()->set_read_at_ms(9000);
    return inv;
  };
  struct Case {
    const char* name;
    std::function<void(dcufleet::v1::NodeInventory*)> change;
    bool moved;
  };
  const Case cases[] = {
      {"times only", [](auto*) {}, false},
      {"bytes", [](auto* inv) { inv->mutable_devices(1)->mutable_device_free()->set_bytes(1); }, true},
      {"valid", [](auto* inv) { inv->mutable_devices(0)->mutable_total()->set_valid(true); }, true},
      {"source", [](auto* inv) { inv->mutable_devices(0)->mutable_host_free()->set_source("rocm_smi"); }, true},
      {"a reading gone", [](auto* inv) { inv->mutable_devices(0)->clear_host_free(); }, true},
      {"a reading new", [](auto* inv) { inv->mutable_devices(1)->mutable_holders_vram()->set_bytes(0); }, true},
      {"unreclaimed", [](auto* inv) { inv->mutable_devices(1)->set_unreclaimed_bytes(5); }, true},
  };
  for (const Case& c : cases) {
    dcufleet::v1::NodeInventory now = later(before);
    c.change(&now);
    for (const bool compact : {false, true}) {
      dcufleet::v1::NodeStatus status;
      *status.mutable_inventory() = now;
      if (compact) {
        CompactFiguresWriter writer;
        writer.Sent(before);
        writer.MakeCompactDelta(&status);
      } else {
        MakeDelta(&status);
      }
      absl::StatusOr<bool> would = MovingFiguresMove(status, before);
      ASSERT_TRUE(would.ok()) << c.name << ": " << would.status();
      EXPECT_EQ(*would, c.moved) << c.name << (compact ? " (compact, unapplied)" : " (device_memory, unapplied)");
      dcufleet::v1::NodeInventory held = before;
      bool moved = !c.moved;
      ASSERT_TRUE(ApplyMovingFigures(status, &held, &moved).ok()) << c.name;
      EXPECT_EQ(moved, c.moved) << c.name << (compact ? " (compact)" : " (device_memory)");
      EXPECT_EQ(held.SerializeAsString(), now.SerializeAsString()) << c.name;
    }
  }
}

}  // namespace
}  // namespace dcu::common
