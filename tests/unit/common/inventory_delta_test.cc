#include "common/inventory_delta.h"

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

}  // namespace
}  // namespace dcu::common
