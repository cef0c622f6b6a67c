#include "agent/inventory/inventory_merger.h"

#include "absl/strings/match.h"
#include "agent/probe/findings.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using dcufleet::v1::Device;
using dcufleet::v1::NodeInventory;

constexpr int64_t kGiB = 1ll << 30;

dcufleet::v1::MemoryReading R(int64_t b, const std::string& src) {
  dcufleet::v1::MemoryReading r;
  r.set_bytes(b);
  r.set_source(src);
  r.set_valid(true);
  return r;
}

Device Dev(int index, const std::string& bus, const std::string& arch = "", const std::string& src = "") {
  Device d;
  d.set_index(index);
  d.set_pci_bus(bus);
  d.set_pci_vendor_id(0x1d94);
  d.set_pci_device_id(0x6210);
  if (!arch.empty()) {
    d.set_arch(arch);
    d.set_arch_source(src);
  }
  return d;
}

ProbeReport Report(std::vector<Device> devs) {
  ProbeReport r;
  r.devices = std::move(devs);
  return r;
}

bool Has(const google::protobuf::RepeatedPtrField<dcufleet::v1::Finding>& fs, absl::string_view code,
         absl::string_view text = "") {
  for (const auto& f : fs) {
    if (f.code() == code && absl::StrContains(f.message(), text)) return true;
  }
  return false;
}

TEST(MergeDevicesTest, ArchChainTakesNextSourceAndKeepsRejections) {
  Device kfd = Dev(0, "0000:07:00.0");
  *kfd.add_findings() = MakeFinding(kWarning, kArchRejected, "kfd:gfx_target_version", "rejected 18446744073709551615");
  Device smi = Dev(0, "0000:07:00.0");
  *smi.add_findings() = MakeFinding(kWarning, kArchRejected, "rocm_smi", "rejected 'gfx18446744073709551615'");
  Device hip = Dev(0, "0000:07:00.0", "gfx928", "hip:gcnArchName");
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", Report({kfd})}, {"rocm_smi", Report({smi})}, {"hip", Report({hip})}}, {}, &node);
  ASSERT_EQ(node.devices_size(), 1);
  const Device& d = node.devices(0);
  EXPECT_EQ(d.arch(), "gfx928");
  EXPECT_EQ(d.arch_source(), "hip:gcnArchName");
  EXPECT_TRUE(Has(d.findings(), kArchRejected, "18446744073709551615"));
  EXPECT_TRUE(Has(d.findings(), kArchRejected, "gfx18446744073709551615"));
  EXPECT_EQ(node.probe_log_size(), 3);
}

TEST(MergeDevicesTest, ProductTableIsTheLastArchSource) {
  Device d = Dev(0, "0000:19:00.0");
  d.set_pci_vendor_id(0x1002);
  d.set_pci_device_id(0x6860);  // Vega 10 / MI25 on a kernel without gfx_target_version
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", Report({d})}}, {}, &node);
  EXPECT_EQ(node.devices(0).arch(), "gfx900");
  EXPECT_EQ(node.devices(0).arch_source(), "table:pci 0x1002:0x6860");
}

TEST(MergeDevicesTest, NoValidArchAnywhereIsAFinding) {
  Device d = Dev(0, "0000:19:00.0");
  d.set_pci_device_id(0x6999);
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", Report({d})}}, {}, &node);
  EXPECT_EQ(node.devices(0).arch(), "");
  EXPECT_TRUE(Has(node.devices(0).findings(), kArchMissing));
}

TEST(MergeDevicesTest, DisagreeingArchesAreReported) {
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", Report({Dev(0, "0000:07:00.0", "gfx906", "kfd:gfx_target_version")})},
                {"hip", Report({Dev(0, "0000:07:00.0", "gfx928", "hip:gcnArchName")})}},
               {}, &node);
  EXPECT_EQ(node.devices(0).arch(), "gfx906");
  EXPECT_TRUE(Has(node.devices(0).findings(), kArchDisagree, "'gfx928' from hip:gcnArchName"));
}

TEST(MergeDevicesTest, RuntimeOrdinalWinsAndFiguresKeepSources) {
  Device a = Dev(0, "0000:07:00.0", "gfx928", "kfd:gfx_target_version");
  *a.mutable_host_used() = R(2 << 20, "sysfs:card1/device/mem_info_vram_used");
  Device b = Dev(1, "0000:0a:00.0", "gfx928", "kfd:gfx_target_version");
  Device ha = Dev(1, "0000:07:00.0");
  *ha.mutable_device_free() = R(5 * kGiB, "hip:hipMemGetInfo");
  *ha.mutable_device_total() = R(64 * kGiB, "hip:hipMemGetInfo");
  Device hb = Dev(0, "0000:0a:00.0");
  *hb.mutable_device_free() = R(60 * kGiB, "hip:hipMemGetInfo");
  *hb.mutable_device_total() = R(64 * kGiB, "hip:hipMemGetInfo");
  Device smi = Dev(0, "0000:07:00.0");
  *smi.mutable_host_used() = R(3 * kGiB, "rocm_smi:rsmi_dev_memory_usage_get");
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", Report({a, b})}, {"rocm_smi", Report({smi})}, {"hip", Report({ha, hb})}}, {}, &node);
  ASSERT_EQ(node.devices_size(), 2);
  EXPECT_EQ(node.devices(0).pci_bus(), "0000:0a:00.0");  // HIP ordinal 0
  EXPECT_EQ(node.devices(1).pci_bus(), "0000:07:00.0");
  EXPECT_EQ(node.devices(1).device_free().bytes(), 5 * kGiB);
  // The first backend in order wins a figure: sysfs, not rocm-smi.
  EXPECT_EQ(node.devices(1).host_used().source(), "sysfs:card1/device/mem_info_vram_used");
}

TEST(MergeDevicesTest, FailedBackendsBecomeNodeFindings) {
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", absl::PermissionDeniedError("cannot list '/sys/class/kfd/kfd/topology/nodes'")},
                {"rocm_smi", absl::UnavailableError("no librocm_smi64")},
                {"hip", absl::DeadlineExceededError("dcu-memprobe did not finish")}},
               {}, &node);
  EXPECT_EQ(node.devices_size(), 0);
  ASSERT_EQ(node.findings_size(), 3);
  EXPECT_EQ(node.findings(0).code(), kProbePermission);
  EXPECT_EQ(node.findings(0).severity(), kError);
  EXPECT_EQ(node.findings(1).severity(), kInfo);
  EXPECT_EQ(node.findings(2).code(), kProbeTimeout);
  EXPECT_TRUE(absl::StartsWith(node.probe_log(0), "sysfs_kfd: PERMISSION_DENIED"));
}

TEST(MergeDevicesTest, DevicesOfOneBackendAreNotMergedWithEachOther) {
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", Report({Dev(0, "0000:07:00.0"), Dev(1, "0000:07:00.0")})}}, {}, &node);
  EXPECT_EQ(node.devices_size(), 2);
}

TEST(MergeDevicesTest, Bw1000NamedByVendorAndArch) {
  Device d = Dev(0, "0000:07:00.0", "gfx936", "kfd:gfx_target_version");
  d.set_pci_device_id(0x6310);
  NodeInventory node;
  MergeDevices({{"sysfs_kfd", Report({d})}}, {}, &node);
  EXPECT_EQ(node.devices(0).product_name(), "BW1000");
  EXPECT_EQ(node.devices(0).product_name_source(), "table:vendor+arch 0x1d94 gfx936");
}

// The first seed: the SMI says the card is empty, hipMemGetInfo says
// 4.8 of 63.98 GiB free, and no process holds the device.
NodeInventory SeedNode() {
  NodeInventory node;
  Device* d = node.add_devices();
  *d->mutable_total() = R(65520ll << 20, "kfd:nodes/1/mem_banks/0/properties");
  *d->mutable_host_used() = R(2 << 20, "sysfs:card1/device/mem_info_vram_used");
  *d->mutable_host_free() = R((65520ll << 20) - (2 << 20), "derived");
  *d->mutable_device_total() = R(65520ll << 20, "hip:hipMemGetInfo");
  *d->mutable_device_free() = R(static_cast<int64_t>(4.8 * kGiB), "hip:hipMemGetInfo");
  *d->mutable_holders_vram() = R(0, "procscan:no holders");
  return node;
}

TEST(ComputeMemoryVerdictsTest, SeedOneUnreclaimedMemory) {
  NodeInventory node = SeedNode();
  ComputeMemoryVerdicts({}, &node);
  const Device& d = node.devices(0);
  int64_t expect = (65520ll << 20) - static_cast<int64_t>(4.8 * kGiB);
  EXPECT_EQ(d.unreclaimed_bytes(), expect);
  EXPECT_TRUE(d.unreclaimed().valid());
  EXPECT_TRUE(absl::StrContains(d.unreclaimed().source(), "hip:hipMemGetInfo")) << d.unreclaimed().source();
  EXPECT_EQ(d.schedulable_free().bytes(), static_cast<int64_t>(4.8 * kGiB));
  EXPECT_TRUE(absl::StartsWith(d.schedulable_free().source(), "hip:hipMemGetInfo"));
  EXPECT_TRUE(Has(d.findings(), kUnreclaimed, "59.18 GiB"));
  EXPECT_TRUE(Has(d.findings(), kMemoryViewsDisagree));
}

TEST(ComputeMemoryVerdictsTest, LeftoverHolderExplainsTheMemory) {
  NodeInventory node = SeedNode();
  Device* d = node.mutable_devices(0);
  auto* h = d->add_holders();
  h->set_pid(4121);
  h->set_state("S");
  h->set_holder_class(dcufleet::v1::HOLDER_LEFTOVER);
  h->set_cmdline("python -m vllm.entrypoints.openai.api_server");
  h->set_vram_bytes(59 * kGiB);
  *d->mutable_holders_vram() = R(59 * kGiB, "kfd");
  ComputeMemoryVerdicts({}, &node);
  EXPECT_EQ(node.devices(0).unreclaimed_bytes(), 0);  // 0.18 GiB is within tolerance
  EXPECT_TRUE(Has(node.devices(0).findings(), kLeftoverHolders, "4121"));
  EXPECT_FALSE(Has(node.devices(0).findings(), kUnreclaimed));
}

TEST(ComputeMemoryVerdictsTest, UnknownHolderVramMakesItUndetermined) {
  NodeInventory node = SeedNode();
  auto* h = node.mutable_devices(0)->add_holders();
  h->set_pid(77);
  h->set_state("S");
  h->set_holder_class(dcufleet::v1::HOLDER_UNMANAGED);
  h->set_vram_bytes(-1);
  ComputeMemoryVerdicts({}, &node);
  EXPECT_EQ(node.devices(0).unreclaimed_bytes(), 0);
  EXPECT_FALSE(node.devices(0).unreclaimed().valid());
  EXPECT_TRUE(Has(node.devices(0).findings(), kUnreclaimedUnknown, "77"));
}

TEST(ComputeMemoryVerdictsTest, ZombieVramIsUnreclaimed) {
  NodeInventory node = SeedNode();
  Device* d = node.mutable_devices(0);
  auto* h = d->add_holders();
  h->set_pid(88);
  h->set_ppid(12);
  h->set_parent_cmdline("bash");
  h->set_state("Z");
  h->set_holder_class(dcufleet::v1::HOLDER_ZOMBIE);
  h->set_vram_bytes(59 * kGiB);
  ComputeMemoryVerdicts({}, &node);
  EXPECT_GT(node.devices(0).unreclaimed_bytes(), 59 * kGiB);
  EXPECT_TRUE(Has(node.devices(0).findings(), kZombieHolders, "parent 12 'bash'"));
}

// A KFD record whose process has left /proc (seed 000's) is no zombie: no
// parent can reap it, and the finding says what can be done.
TEST(ComputeMemoryVerdictsTest, AnExitedHoldersRecordIsNoZombie) {
  NodeInventory node = SeedNode();
  Device* d = node.mutable_devices(0);
  auto* h = d->add_holders();
  h->set_pid(32768);
  h->set_state("?");
  h->set_holder_class(dcufleet::v1::HOLDER_EXITED);
  h->set_vram_bytes(59 * kGiB);
  ComputeMemoryVerdicts({}, &node);
  EXPECT_GT(node.devices(0).unreclaimed_bytes(), 59 * kGiB);
  EXPECT_TRUE(Has(node.devices(0).findings(), kExitedHolders, "exited holder(s): 32768: no live process"));
  // Not a zombie: no parent can reap it.
  EXPECT_FALSE(Has(node.devices(0).findings(), kZombieHolders, ""));
}

TEST(ComputeMemoryVerdictsTest, HostViewOnly) {
  NodeInventory node;
  Device* d = node.add_devices();
  *d->mutable_total() = R(64 * kGiB, "kfd");
  *d->mutable_host_used() = R(10 * kGiB, "sysfs:card1/device/mem_info_vram_used");
  *d->mutable_host_free() = R(54 * kGiB, "derived");
  *d->mutable_holders_vram() = R(0, "procscan:no holders");
  ComputeMemoryVerdicts({}, &node);
  EXPECT_EQ(node.devices(0).unreclaimed_bytes(), 10 * kGiB);
  EXPECT_TRUE(absl::StrContains(node.devices(0).unreclaimed().source(), "mem_info_vram_used"));
  EXPECT_EQ(node.devices(0).schedulable_free().bytes(), 54 * kGiB);
}

}  // namespace
}  // namespace dcu::agent
