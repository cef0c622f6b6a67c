// A whole NVIDIA node through the inventory: the nvml probe (fake
// libnvidia-ml.so.1 built by the tests), the cuda probe (the real
// dcu-memprobe child with a fake libcuda.so.1), the holder scan of real
// processes holding a fixture /dev/nvidia0, the merge, the memory verdicts,
// and a real reap of a leftover.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/inventory/inventory.h"
#include "agent/reap/reap_node.h"
#include "agent/probe/findings.h"
#include "agent/procscan/proc_scanner.h"
#include "common/proc_stat.h"
#include "common/units.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using common::kGiB;
using common::kMiB;
using dcu::testing::ChildProcess;
using dcu::testing::TempDir;

constexpr int64_t kNvmlTotal = 150754820096;   // 143771 MiB, as nvidia-smi shows an H200
constexpr int64_t kReserved = 528 * kMiB;
constexpr int64_t kCudaTotal = kNvmlTotal - kReserved;
constexpr int64_t kSelf = 500 * kMiB;
constexpr char kUuidHex[] = "1f0e2d3c4b5a69788796a5b4c3d2e1f0";

bool Has(const google::protobuf::RepeatedPtrField<dcufleet::v1::Finding>& fs, absl::string_view code,
         absl::string_view text = "") {
  for (const auto& f : fs) {
    if (f.code() == code && absl::StrContains(f.message(), text)) return true;
  }
  return false;
}

class NvidiaInventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path() + "/root";
    for (const char* f : {"/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"}) dcu::testing::WriteFile(root_ + f, "");
    options_.root = root_;
    options_.proc_root = "/proc";
    options_.probes = {"nvml", "cuda"};
    options_.memprobe_path = DCU_MEMPROBE;
    options_.nvml_library = FAKE_NVML_GOOD;
    options_.cuda_library = FAKE_CUDA_GOOD;
  }
  // The driver's figures: `held` by processes (listed by NVML as `procs`),
  // the helper's context on top in the device view.
  void SetFigures(int64_t held, const std::string& procs) {
    setenv("FAKE_NVML_DEVICES",
           absl::StrCat("00000000:19:00.0,", kNvmlTotal, ",", kReserved, ",", held,
                        ",0,90,GPU-1f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0,NVIDIA H200")
               .c_str(),
           1);
    setenv("FAKE_CUDA_DEVICES",
           absl::StrCat("0000:19:00.0,", kCudaTotal - held - kSelf, ",", kCudaTotal, ",90,", kUuidHex).c_str(), 1);
    setenv("FAKE_NVML_PROCS", absl::StrCat(procs, procs.empty() ? "" : ";", "0:self:", kSelf).c_str(), 1);
  }
  std::unique_ptr<ChildProcess> Hold(const std::string& marker) {
    std::map<std::string, std::string> env;
    if (!marker.empty()) env[kInstanceMarkerEnv] = marker;
    auto c = std::make_unique<ChildProcess>(
        absl::StrCat("exec 3<'", root_, "/dev/nvidiactl'; exec 4<'", root_, "/dev/nvidia0'; echo ready; exec sleep 1000"),
        env);
    EXPECT_EQ(c->ReadReady(), "ready");
    return c;
  }
  TempDir tmp_;
  std::string root_;
  InventoryOptions options_;
};

TEST_F(NvidiaInventoryTest, IdleNodeHasNothingUnreclaimed) {
  SetFigures(0, "");
  auto inv = CollectInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->devices_size(), 1) << inv->DebugString();
  const auto& d = inv->devices(0);
  EXPECT_EQ(inv->driver_version(), "580.159.04");
  EXPECT_EQ(inv->probe_log(0), "nvml: ok, 1 device(s)");
  EXPECT_EQ(inv->probe_log(1), "cuda: ok, 1 device(s)");
  EXPECT_EQ(d.vendor(), "nvidia");
  EXPECT_EQ(d.arch(), "sm_90");
  EXPECT_EQ(d.pci_bus(), "0000:19:00.0");
  EXPECT_EQ(d.total().bytes(), kNvmlTotal);
  EXPECT_EQ(d.device_total().bytes(), kCudaTotal);
  EXPECT_EQ(d.device_self_used().bytes(), kSelf);
  // Device view: total - free - the helper's own context = 0.
  EXPECT_TRUE(d.unreclaimed().valid()) << d.unreclaimed().source();
  EXPECT_EQ(d.unreclaimed_bytes(), 0);
  EXPECT_TRUE(absl::StrContains(d.unreclaimed().source(), "the helper's own context")) << d.unreclaimed().source();
  // Schedulable: the smaller of NVML's free and the helper's free.
  EXPECT_EQ(d.schedulable_free().bytes(), kCudaTotal - kSelf);
  EXPECT_EQ(d.holders_size(), 0);
  EXPECT_FALSE(Has(d.findings(), kUnreclaimed));
}

TEST_F(NvidiaInventoryTest, HoldersWithNvmlMemoryAndALeak) {
  auto leftover = Hold("inst-ended");
  auto stopped = Hold("");
  ASSERT_EQ(kill(stopped->pid(), SIGSTOP), 0);
  // SIGSTOP is delivered asynchronously: wait until /proc says 'T' so the
  // scan below sees the stopped state on a loaded machine too.
  for (int i = 0; i < 200; ++i) {
    auto st = common::ReadProcStat("/proc", stopped->pid());
    if (st.ok() && st->state == 'T') break;
    usleep(10000);
  }
  // 20 GiB + 4 GiB held by the two, 3 GiB more that nobody holds.
  const int64_t a = 20 * kGiB, b = 4 * kGiB, leak = 3 * kGiB;
  SetFigures(a + b + leak, absl::StrCat("0:", leftover->pid(), ":", a, ";0:", stopped->pid(), ":", b));
  options_.live_instance_ids = {"inst-live"};
  auto inv = CollectInventory(options_);
  kill(stopped->pid(), SIGCONT);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->devices_size(), 1);
  const auto& d = inv->devices(0);
  ASSERT_EQ(d.holders_size(), 2) << d.DebugString();
  for (const auto& h : d.holders()) {
    if (h.pid() == leftover->pid()) {
      EXPECT_EQ(h.holder_class(), dcufleet::v1::HOLDER_LEFTOVER);
      EXPECT_EQ(h.vram_bytes(), a);
    } else {
      EXPECT_EQ(h.pid(), stopped->pid());
      EXPECT_EQ(h.holder_class(), dcufleet::v1::HOLDER_UNMANAGED);
      EXPECT_EQ(h.state(), "T");  // SIGSTOPped
      EXPECT_EQ(h.vram_bytes(), b);
    }
  }
  EXPECT_EQ(d.holders_vram().bytes(), a + b);
  EXPECT_EQ(d.unreclaimed_bytes(), leak);
  EXPECT_TRUE(Has(d.findings(), kUnreclaimed, "3.00 GiB of device memory")) << d.DebugString();
  EXPECT_TRUE(Has(d.findings(), kLeftoverHolders, absl::StrCat(leftover->pid())));
  // The agent's own NVML handles are not holders.
  for (const auto& h : d.holders()) EXPECT_NE(h.pid(), getpid());
}

TEST_F(NvidiaInventoryTest, ReapingTheLeftoverGivesItsMemoryBack) {
  auto leftover = Hold("inst-ended");
  const int64_t a = 20 * kGiB;
  SetFigures(a, absl::StrCat("0:", leftover->pid(), ":", a));
  auto collector = InventoryCollector::Create(options_);
  ASSERT_TRUE(collector.ok()) << collector.status();
  auto before = (*collector)->CollectFull();
  ASSERT_EQ(before.devices(0).holders_size(), 1);
  EXPECT_EQ(before.devices(0).holders(0).holder_class(), dcufleet::v1::HOLDER_LEFTOVER);

  ReapOptions ro;
  ro.grace = absl::Seconds(5);
  Reaper reaper;
  auto report = reaper.Reap(before, ro, [&]() -> absl::StatusOr<dcufleet::v1::NodeInventory> {
    // The driver gives the memory back when the process is gone.
    SetFigures(0, "");
    (*collector)->InvalidateDeviceView();
    return (*collector)->CollectFull();
  });
  leftover->Wait();
  ASSERT_GE(report.actions_size(), 1);
  EXPECT_EQ(report.actions(0).pid(), leftover->pid());
  EXPECT_EQ(report.actions(0).action(), "sigterm");
  EXPECT_EQ(report.actions(0).result(), "ended");
  ASSERT_EQ(report.memory_size(), 1);
  EXPECT_EQ(report.memory(0).device_free_after().bytes() - report.memory(0).device_free_before().bytes(), a);
  EXPECT_EQ(report.memory(0).unreclaimed_after(), 0);
}

// On the H200 the driver listed a reaped process (a zombie by then) with its
// 20 GiB for a while after it ended. The fake driver here keeps listing
// zombies until they are collected; ReapNode measures again until the ended
// process is gone from the list, so "after" shows the memory back.
TEST_F(NvidiaInventoryTest, ReapNodeWaitsForTheDriverToRelease) {
  auto leftover = Hold("inst-ended");
  const int64_t a = 20 * kGiB;
  SetFigures(0, "");
  const std::string procs = tmp_.path() + "/gpu_procs";
  std::ofstream(procs) << "0:" << leftover->pid() << ":" << a << "\n";
  setenv("FAKE_GPU_PROCS_FILE", procs.c_str(), 1);
  setenv("FAKE_GPU_LIST_ZOMBIES", "1", 1);
  auto collector = InventoryCollector::Create(options_);
  ASSERT_TRUE(collector.ok()) << collector.status();
  // The zombie is collected (as its parent, this test) 300 ms after it ended.
  std::thread collect([&] {
    while (dcu::testing::ProcState(leftover->pid()) != 'Z') usleep(5000);
    usleep(300000);
    leftover->Wait();
  });
  ReapOptions ro;
  ro.grace = absl::Seconds(5);
  auto report = ReapNode(collector->get(), ro);
  collect.join();
  unsetenv("FAKE_GPU_PROCS_FILE");
  unsetenv("FAKE_GPU_LIST_ZOMBIES");
  ASSERT_EQ(report.memory_size(), 1);
  EXPECT_EQ(report.memory(0).host_used_before().bytes(), a);
  EXPECT_EQ(report.memory(0).host_used_after().bytes(), 0);
  EXPECT_EQ(report.memory(0).device_free_after().bytes() - report.memory(0).device_free_before().bytes(), a);
  ASSERT_EQ(report.findings_size(), 1) << report.DebugString();
  EXPECT_EQ(report.findings(0).code(), "driver_release_lag");
  EXPECT_TRUE(absl::StrContains(report.findings(0).message(), absl::StrCat(leftover->pid()))) << report.findings(0).message();
  EXPECT_TRUE(absl::StrContains(report.findings(0).message(), "released within")) << report.findings(0).message();
}

TEST_F(NvidiaInventoryTest, HungCudaLeavesTheHostView) {
  SetFigures(0, "");
  TempDir dir;
  const std::string lib = dir.path() + "/libcuda.so.1";
  std::filesystem::copy_file(FAKE_CUDA_HANG_LIB, lib);
  options_.cuda_library = lib;
  options_.memprobe_timeout = absl::Milliseconds(500);
  auto inv = CollectInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->devices_size(), 1);
  EXPECT_TRUE(Has(inv->findings(), kProbeTimeout, "hung in cuInit")) << inv->DebugString();
  const auto& d = inv->devices(0);
  EXPECT_TRUE(d.host_free().valid());
  EXPECT_FALSE(d.device_free().valid());
  // Host view only: NVML's used (reserved excluded) explained by holders.
  EXPECT_TRUE(d.unreclaimed().valid());
  EXPECT_EQ(d.schedulable_free().bytes(), kNvmlTotal - kReserved);
}

}  // namespace
}  // namespace dcu::agent
