#include "agent/inventory/inventory.h"
#include "agent/reap/reap_node.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/probe/findings.h"
#include "agent/procscan/proc_scanner.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using dcu::testing::ChildProcess;
using dcu::testing::TempDir;
using dcufleet::v1::Device;
using dcufleet::v1::NodeInventory;

constexpr int64_t kGiB = 1ll << 30;
constexpr int64_t kTotal = 65520ll << 20;

bool Has(const google::protobuf::RepeatedPtrField<dcufleet::v1::Finding>& fs, absl::string_view code,
         absl::string_view text = "") {
  for (const auto& f : fs) {
    if (f.code() == code && absl::StrContains(f.message(), text)) return true;
  }
  return false;
}

// The node of the first seed, as a fixture root with every backend:
// 8 x K100_AI (sysfs), librocm_smi64 in both DTK and hyhal directories
// (hyhal first, without rsmi_init), HIP seeing device 0 with 4.8 GiB free
// and device 1 held by a leftover worker of an ended instance.
class InventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dcu::testing::CopyFixture("k100ai-8x", tmp_.path());
    for (auto [lib, dir] : {std::pair{FAKE_RSMI_NOINIT, "/opt/hyhal/lib"},
                            std::pair{FAKE_RSMI_GOOD, "/opt/dtk/.hyhal/rocm_smi/lib"}}) {
      std::filesystem::create_directories(root_ + dir);
      std::filesystem::copy_file(lib, root_ + dir + "/librocm_smi64.so.2");
    }
    setenv("FAKE_HIP_DEVICES",
           absl::StrCat("0000:07:00.0,", static_cast<int64_t>(4.8 * kGiB), ",", kTotal, ",gfx928:sramecc-:xnack-;",
                        "0000:0a:00.0,", kTotal - 50 * kGiB - (300 << 20), ",", kTotal, ",gfx928")
               .c_str(),
           1);
    options_.root = root_;
    options_.proc_root = "/proc";
    options_.memprobe_path = DCU_MEMPROBE;
    options_.hip_library = FAKE_HIP_GOOD;
  }
  TempDir tmp_;
  std::string root_;
  InventoryOptions options_;
};

TEST_F(InventoryTest, SeedNodeFullReport) {
  ChildProcess worker(absl::StrCat("exec 3<'", root_, "/dev/kfd'; exec 4<'", root_,
                                   "/dev/dri/renderD129'; echo ready; exec sleep 1000"),
                      {{kInstanceMarkerEnv, "inst-0p6b"}});
  ASSERT_EQ(worker.ReadReady(), "ready");
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", worker.pid(), "/vram_51111"),
                          absl::StrCat(50 * kGiB, "\n"));
  options_.live_instance_ids = {"inst-qwen32b"};

  auto inv = CollectInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->devices_size(), 8);
  EXPECT_EQ(inv->driver_version(), "hydcu 6.3.14-V1.12.0");
  EXPECT_EQ(inv->root(), root_);
  ASSERT_EQ(inv->probe_log_size(), 4);
  EXPECT_TRUE(absl::StartsWith(inv->probe_log(3), "procscan: all processes")) << inv->probe_log(3);
  EXPECT_EQ(inv->probe_log(0), "sysfs_kfd: ok, 8 device(s)");
  EXPECT_EQ(inv->probe_log(1), "rocm_smi: ok, 2 device(s)");
  EXPECT_EQ(inv->probe_log(2), "hip: ok, 2 device(s)");
  EXPECT_TRUE(Has(inv->findings(), kRsmiConflict, "LD_LIBRARY_PATH=/opt/dtk/.hyhal/rocm_smi/lib:/opt/hyhal/lib"));

  // Device 0: nobody holds it, yet the device view says 4.8 GiB free.
  const Device& d0 = inv->devices(0);
  EXPECT_EQ(d0.pci_bus(), "0000:07:00.0");
  EXPECT_EQ(d0.arch(), "gfx928");
  EXPECT_EQ(d0.arch_source(), "kfd:gfx_target_version");
  EXPECT_EQ(d0.host_used().source(), "sysfs:card1/device/mem_info_vram_used");
  EXPECT_EQ(d0.device_free().bytes(), static_cast<int64_t>(4.8 * kGiB));
  EXPECT_EQ(d0.device_free().source(), "hip:hipMemGetInfo");
  EXPECT_EQ(d0.unreclaimed_bytes(), kTotal - static_cast<int64_t>(4.8 * kGiB));
  EXPECT_EQ(d0.schedulable_free().bytes(), static_cast<int64_t>(4.8 * kGiB));
  EXPECT_TRUE(Has(d0.findings(), kUnreclaimed));
  EXPECT_EQ(d0.holders_size(), 0);

  // Device 1: the leftover worker explains its memory; rocm-smi's garbage
  // arch was rejected and recorded, KFD's is used.
  const Device& d1 = inv->devices(1);
  ASSERT_EQ(d1.holders_size(), 1);
  EXPECT_EQ(d1.holders(0).pid(), worker.pid());
  EXPECT_EQ(d1.holders(0).holder_class(), dcufleet::v1::HOLDER_LEFTOVER);
  EXPECT_EQ(d1.holders(0).vram_bytes(), 50 * kGiB);
  EXPECT_EQ(d1.unreclaimed_bytes(), 0);
  EXPECT_TRUE(Has(d1.findings(), kLeftoverHolders));
  EXPECT_TRUE(Has(d1.findings(), kArchRejected, "gfx18446744073709551615"));
  EXPECT_EQ(d1.arch(), "gfx928");

  // Devices HIP did not report keep the host view only.
  const Device& d5 = inv->devices(5);
  EXPECT_FALSE(d5.device_free().valid());
  EXPECT_EQ(d5.schedulable_free().bytes(), d5.host_free().bytes());
  EXPECT_EQ(d5.unreclaimed_bytes(), 0);  // 2 MiB host used is within tolerance

  // The reap: the leftover ends, memory is reported before and after.
  auto collector = InventoryCollector::Create(options_);
  ASSERT_TRUE(collector.ok());
  ReapOptions ro;
  ro.grace = absl::Milliseconds(300);
  auto report = ReapNode(collector->get(), ro);
  bool ended = false;
  for (const auto& a : report.actions()) {
    if (a.pid() == worker.pid() && a.action() == "sigterm") ended = a.result() == "ended";
  }
  EXPECT_TRUE(ended);
  EXPECT_EQ(report.memory_size(), 8);
  // Device 0's memory is not held by any process: still unreclaimed.
  EXPECT_TRUE(Has(report.findings(), kUnreclaimed, "device 0"));
  worker.Wait();
}

TEST_F(InventoryTest, HungHipRuntimeDoesNotStopTheReport) {
  options_.hip_library = FAKE_HIP_HANG_LIB;
  options_.memprobe_timeout = absl::Seconds(1);
  options_.probes = {"sysfs_kfd", "hip"};
  auto inv = CollectInventory(options_);
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->devices_size(), 8);
  EXPECT_TRUE(Has(inv->findings(), kProbeTimeout, "hipMemGetInfo device 1"));
  EXPECT_TRUE(inv->devices(0).device_free().valid());   // answered before the hang
  EXPECT_FALSE(inv->devices(1).device_free().valid());
  EXPECT_TRUE(inv->devices(1).host_free().valid());
}

TEST_F(InventoryTest, PeriodicCollectReadsOnlyKfdProcessesButSeesThem) {
  ChildProcess worker(absl::StrCat("exec 3<'", root_, "/dev/kfd'; exec 4<'", root_,
                                   "/dev/dri/renderD130'; echo ready; exec sleep 1000"),
                      {{kInstanceMarkerEnv, "inst-live"}});
  ASSERT_EQ(worker.ReadReady(), "ready");
  // KFD lists every process that opened /dev/kfd.
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", worker.pid(), "/vram_52222"), "1024\n");
  options_.probes = {"sysfs_kfd"};
  options_.full_scan_every = 0;
  options_.live_instance_ids = {"inst-live"};
  auto c = InventoryCollector::Create(options_);
  ASSERT_TRUE(c.ok());
  NodeInventory inv = (*c)->Collect();
  EXPECT_TRUE(absl::StrContains(inv.probe_log(1), "KFD processes only, 1 scanned")) << inv.probe_log(1);
  ASSERT_EQ(inv.devices(2).holders_size(), 1);
  EXPECT_EQ(inv.devices(2).holders(0).pid(), worker.pid());
  EXPECT_EQ(inv.devices(2).holders(0).holder_class(), dcufleet::v1::HOLDER_MANAGED);
  EXPECT_EQ(inv.devices(2).holders(0).device_paths_size(), 2);  // its fds were read
  NodeInventory full = (*c)->CollectFull();
  EXPECT_TRUE(absl::StrContains(full.probe_log(1), "all processes")) << full.probe_log(1);
  EXPECT_GT(full.processes_scanned(), 1);
}

// The device's own view is cached for memprobe_ttl (a HIP start-up per
// probe), but not across an instance becoming Ready or ending: an engine
// holds its memory once Ready and gives it back when it ends, so either asks
// the device again at the next Collect. The simulated engine's memory
// is a KFD record the test libamdhip64 subtracts ($FAKE_HIP_KFD_ROOT), as
// fake_vllm writes it.
TEST_F(InventoryTest, AnInstancePhaseChangeAsksTheDeviceAgain) {
  setenv("FAKE_HIP_KFD_ROOT", root_.c_str(), 1);
  options_.probes = {"sysfs_kfd", "hip"};
  options_.memprobe_ttl = absl::Hours(1);
  auto c = InventoryCollector::Create(options_);
  ASSERT_TRUE(c.ok());
  auto status = [](const std::string& id, dcufleet::v1::InstancePhase phase) {
    dcufleet::v1::InstanceStatus st;
    st.set_instance_id(id);
    st.set_phase(phase);
    return st;
  };
  auto device1_free = [&] {
    NodeInventory inv = (*c)->Collect();
    return inv.devices(1).device_free().bytes();
  };
  (*c)->SetInstances({});
  const int64_t before = device1_free();
  ASSERT_GT(before, 10 * kGiB);

  ChildProcess engine(absl::StrCat("exec 3<'", root_, "/dev/kfd'; exec 4<'", root_,
                                   "/dev/dri/renderD129'; echo ready; exec sleep 1000"),
                      {{kInstanceMarkerEnv, "inst-new"}});
  ASSERT_EQ(engine.ReadReady(), "ready");
  const std::string record = absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", engine.pid());
  dcu::testing::WriteFile(record + "/.fake-engine", "");
  dcu::testing::WriteFile(record + "/vram_51111", absl::StrCat(10 * kGiB, "\n"));

  // Starting and loading: the memory is still growing, the cached view
  // answers (its own expiry covers a long load).
  (*c)->SetInstances({status("inst-new", dcufleet::v1::INSTANCE_STARTING)});
  EXPECT_EQ(device1_free(), before);
  (*c)->SetInstances({status("inst-new", dcufleet::v1::INSTANCE_LOADING)});
  EXPECT_EQ(device1_free(), before);
  // The instance is Ready: the device is asked again.
  (*c)->SetInstances({status("inst-new", dcufleet::v1::INSTANCE_READY)});
  EXPECT_EQ(device1_free(), before - 10 * kGiB);
  // It ended and its memory went back: asked again once it is Stopped.
  std::filesystem::remove_all(record);
  (*c)->SetInstances({status("inst-new", dcufleet::v1::INSTANCE_READY)});
  EXPECT_EQ(device1_free(), before - 10 * kGiB);  // no change reported yet: cached
  (*c)->SetInstances({status("inst-new", dcufleet::v1::INSTANCE_STOPPED)});
  EXPECT_EQ(device1_free(), before);
  unsetenv("FAKE_HIP_KFD_ROOT");
}

// Inside a Slurm job (issue 20): only the allocated devices are reported,
// another job's holder on a device this job was not given goes with it
// (not an unattributed holder), and an index the node lacks is a warning.
TEST_F(InventoryTest, AllocationKeepsOnlyAllocatedDevices) {
  ChildProcess other_job(absl::StrCat("exec 3<'", root_, "/dev/kfd'; exec 4<'", root_,
                                      "/dev/dri/renderD129'; echo ready; exec sleep 1000"),
                       std::map<std::string, std::string>{});
  ASSERT_EQ(other_job.ReadReady(), "ready");
  dcufleet::v1::NodeAllocation a;
  a.set_scheduler("slurm");
  a.set_job_id("42");
  a.set_partition("dcu");
  a.add_device_indices(2);
  a.add_device_indices(3);
  a.add_device_indices(9);
  a.set_devices_from("SLURM_JOB_GPUS");
  options_.allocation = a;

  auto inv = CollectInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->devices_size(), 2);
  EXPECT_EQ(inv->devices(0).index(), 2);
  EXPECT_EQ(inv->devices(1).index(), 3);
  EXPECT_EQ(inv->allocation().job_id(), "42");
  EXPECT_TRUE(Has(inv->findings(), "allocated_device_missing", "slurm job '42' was given device(s) 9"));
  for (const auto& h : inv->unattributed_holders()) EXPECT_NE(h.pid(), other_job.pid());
  bool logged = false;
  for (const auto& l : inv->probe_log()) {
    logged |= l == "allocation: slurm job '42': 2 of 8 device(s) reported, indices [2,3,9] from SLURM_JOB_GPUS";
  }
  EXPECT_TRUE(logged);
  // No allocation: all eight, and no allocation in the report.
  options_.allocation.reset();
  auto whole = CollectInventory(options_);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->devices_size(), 8);
  EXPECT_FALSE(whole->has_allocation());
}

TEST_F(InventoryTest, UnknownProbeIsInvalidArgument) {
  options_.probes = {"sysfs_kfd", "tpu"};
  EXPECT_TRUE(absl::IsInvalidArgument(CollectInventory(options_).status()));
}

TEST(InventoryNoDeviceTest, DrmOnlyHost) {
  InventoryOptions o;
  o.root = dcu::testing::FixtureRoot("vega10-drm-only");
  o.probes = {"sysfs_kfd", "rocm_smi"};
  o.scan_processes = false;
  auto inv = CollectInventory(o);
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->devices_size(), 0);
  EXPECT_TRUE(Has(inv->findings(), kProbeFailed, "card0 0000:09:00.0"));
  EXPECT_TRUE(Has(inv->findings(), "no_devices"));
}

TEST(InventoryNoDeviceTest, Bw1000AndOldKernelNamesAndArches) {
  InventoryOptions o;
  o.probes = {"sysfs_kfd"};
  o.scan_processes = false;
  o.root = dcu::testing::FixtureRoot("bw1000-8x");
  auto bw = CollectInventory(o);
  ASSERT_TRUE(bw.ok());
  EXPECT_EQ(bw->devices(0).product_name(), "BW1000");
  o.root = dcu::testing::FixtureRoot("vega10-old-kernel");
  auto vega = CollectInventory(o);
  ASSERT_TRUE(vega.ok());
  EXPECT_EQ(vega->devices(0).arch(), "gfx900");
  EXPECT_EQ(vega->devices(0).arch_source(), "table:pci 0x1002:0x6860");
  o.root = dcu::testing::FixtureRoot("garbage-arch");
  auto garbage = CollectInventory(o);
  ASSERT_TRUE(garbage.ok());
  EXPECT_EQ(garbage->devices(0).arch(), "gfx928");
  EXPECT_EQ(garbage->devices(0).arch_source(), "table:pci 0x1d94:0x6210");
  EXPECT_TRUE(Has(garbage->devices(0).findings(), kArchRejected, "18446744073709551615"));
}

TEST_F(InventoryTest, CommandTableAndJson) {
  InventoryArgs args;
  args.root = root_;
  args.memprobe_path = DCU_MEMPROBE;
  args.hip_library = FAKE_HIP_GOOD;
  std::ostringstream out, err;
  int rc = RunInventoryCommand(args, out, err);
  EXPECT_EQ(rc, 1) << err.str();  // unreclaimed memory and a library conflict are warnings
  std::string t = out.str();
  if (getenv("DCU_SHOW")) std::cerr << t;
  EXPECT_TRUE(absl::StrContains(t, "driver hydcu 6.3.14-V1.12.0")) << t;
  EXPECT_TRUE(absl::StrContains(t, "IDX  PRODUCT")) << t;
  EXPECT_TRUE(absl::StrContains(t, "gfx928 (kfd:gfx_target_version)")) << t;
  EXPECT_TRUE(absl::StrContains(t, "4.80 GiB")) << t;
  EXPECT_TRUE(absl::StrContains(t, "FINDINGS")) << t;
  EXPECT_TRUE(absl::StrContains(t, "rocm_smi_library_conflict")) << t;
  EXPECT_TRUE(absl::StrContains(t, "unreclaimed_memory")) << t;

  std::ostringstream jout, jerr;
  args.output = "json";
  EXPECT_EQ(RunInventoryCommand(args, jout, jerr), 1);
  NodeInventory parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(jout.str(), &parsed).ok()) << jout.str().substr(0, 400);
  EXPECT_EQ(parsed.devices_size(), 8);
  EXPECT_EQ(parsed.devices(0).device_free().source(), "hip:hipMemGetInfo");
}

TEST(InventoryCommandTest, BadArgumentsExitTwo) {
  std::ostringstream out, err;
  InventoryArgs a;
  a.output = "yaml";
  EXPECT_EQ(RunInventoryCommand(a, out, err), 2);
  EXPECT_TRUE(absl::StrContains(err.str(), "-o must be"));
  a.output = "table";
  a.device_probe = "hip,hip";
  EXPECT_EQ(RunInventoryCommand(a, out, err), 2);
  a.device_probe = "sysfs_kfd,bogus";
  EXPECT_EQ(RunInventoryCommand(a, out, err), 2);
}

TEST(InventoryCommandTest, HealthyNodeExitsZero) {
  InventoryArgs a;
  a.root = dcu::testing::FixtureRoot("z100-4x");
  a.device_probe = "sysfs_kfd";
  a.no_processes = true;
  std::ostringstream out, err;
  EXPECT_EQ(RunInventoryCommand(a, out, err), 0) << out.str();
  EXPECT_TRUE(absl::StrContains(out.str(), "Z100")) << out.str();
  EXPECT_TRUE(absl::StrContains(out.str(), "FINDINGS none")) << out.str();
}

// The one-shot's table counts holders by class, each under its own name:
// an exited holder's record is not a zombie (the table clamped every class
// past zombie into it).
TEST(InventoryTableTest, HoldersAreCountedByTheirOwnClass) {
  NodeInventory inv;
  Device* d = inv.add_devices();
  d->set_index(0);
  for (auto c : {dcufleet::v1::HOLDER_ZOMBIE, dcufleet::v1::HOLDER_EXITED, dcufleet::v1::HOLDER_EXITED}) {
    d->add_holders()->set_holder_class(c);
  }
  const std::string table = FormatInventoryTable(inv);
  EXPECT_TRUE(absl::StrContains(table, "1 zombie, 2 exited")) << table;
}

}  // namespace
}  // namespace dcu::agent
