// The holder scan on an NVIDIA node: real processes hold files standing for
// /dev/nvidia0, /dev/nvidia1, /dev/nvidiactl and /dev/nvidia-uvm inside a
// fixture root; the scan reads the live /proc, and NVML's process list (as
// the nvml probe puts it on each Device) gives pid -> memory.
#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/procscan/proc_scanner.h"
#include "common/units.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using common::kGiB;
using dcu::testing::ChildProcess;
using dcu::testing::TempDir;
using dcufleet::v1::Device;

class NvidiaScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path() + "/root";
    for (const char* f : {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"}) {
      dcu::testing::WriteFile(root_ + f, "");
    }
    options_.root = root_;
    options_.proc_root = "/proc";
  }
  std::unique_ptr<ChildProcess> Hold(const std::vector<std::string>& files, const std::string& marker) {
    std::string script;
    int fd = 3;
    for (const auto& f : files) absl::StrAppend(&script, "exec ", fd++, "<'", root_, f, "'; ");
    absl::StrAppend(&script, "echo ready; exec sleep 1000");
    std::map<std::string, std::string> env;
    if (!marker.empty()) env[kInstanceMarkerEnv] = marker;
    auto c = std::make_unique<ChildProcess>(script, env);
    EXPECT_EQ(c->ReadReady(), "ready");
    return c;
  }
  static const ScannedProcess* Find(const ProcScanResult& r, int pid) {
    for (const auto& p : r.processes) {
      if (p.holder.pid() == pid) return &p;
    }
    return nullptr;
  }
  // Two GPUs as the nvml probe reports them: minors 0 and 1, a complete
  // process list each.
  static std::vector<Device> Gpus() {
    std::vector<Device> d(2);
    for (int i = 0; i < 2; ++i) {
      d[i].set_index(i);
      d[i].set_vendor("nvidia");
      d[i].set_nvidia_minor(i);
      d[i].set_vendor_processes_source("nvml:nvmlDeviceGetComputeRunningProcesses_v3");
    }
    return d;
  }
  static void List(Device* d, int pid, int64_t bytes) {
    auto* p = d->add_vendor_processes();
    p->set_pid(pid);
    p->set_vram_bytes(bytes);
    p->set_vram_source("nvml:nvmlDeviceGetComputeRunningProcesses_v3");
  }
  TempDir tmp_;
  std::string root_;
  ProcScanOptions options_;
};

TEST_F(NvidiaScanTest, DeviceFilesAreRecognised) {
  // What a CUDA process holds: the control node, UVM, and its GPU's node.
  auto torch = Hold({"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"}, "");
  auto ctl_only = Hold({"/dev/nvidiactl"}, "");
  auto r = ScanDeviceHolders(options_, {});
  ASSERT_TRUE(r.ok()) << r.status();
  const ScannedProcess* t = Find(*r, torch->pid());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->nvidia_minors, std::vector<int>{1});
  ASSERT_EQ(t->holder.device_paths_size(), 3);
  EXPECT_EQ(t->holder.device_paths(0), "/dev/nvidiactl");  // seen from the root
  EXPECT_EQ(t->holder.holder_class(), dcufleet::v1::HOLDER_UNMANAGED);
  const ScannedProcess* c = Find(*r, ctl_only->pid());
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->nvidia_minors.empty());
}

TEST_F(NvidiaScanTest, HoldersGetNvmlMemoryByPidAndDeviceByMinor) {
  auto torch = Hold({"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"}, "inst-a");
  auto idle = Hold({"/dev/nvidiactl", "/dev/nvidia0"}, "");  // opened the GPU, no context
  auto ctl_only = Hold({"/dev/nvidiactl"}, "");
  std::vector<Device> gpus = Gpus();
  List(&gpus[1], torch->pid(), 20 * kGiB + (512 << 20));
  auto r = ScanDeviceHolders(options_, {"inst-a"});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<dcufleet::v1::ProcessHolder> unattributed;
  AttachHolders(*r, &gpus, &unattributed);

  ASSERT_EQ(gpus[1].holders_size(), 1);
  const auto& h = gpus[1].holders(0);
  EXPECT_EQ(h.pid(), torch->pid());
  EXPECT_EQ(h.holder_class(), dcufleet::v1::HOLDER_MANAGED);
  EXPECT_EQ(h.vram_bytes(), 20 * kGiB + (512 << 20));
  EXPECT_EQ(h.vram_source(), "nvml:nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(gpus[1].holders_vram().bytes(), 20 * kGiB + (512 << 20));
  EXPECT_TRUE(gpus[1].holders_vram().valid());

  // Holding /dev/nvidia0 without being in NVML's complete list: no memory
  // there (known zero, not unknown).
  ASSERT_EQ(gpus[0].holders_size(), 1);
  EXPECT_EQ(gpus[0].holders(0).pid(), idle->pid());
  EXPECT_EQ(gpus[0].holders(0).vram_bytes(), 0);
  EXPECT_TRUE(absl::StrContains(gpus[0].holders(0).vram_source(), "not listed")) << gpus[0].holders(0).vram_source();
  EXPECT_TRUE(gpus[0].holders_vram().valid());
  EXPECT_EQ(gpus[0].holders_vram().bytes(), 0);

  // /dev/nvidiactl alone names no GPU.
  ASSERT_EQ(unattributed.size(), 1u);
  EXPECT_EQ(unattributed[0].pid(), ctl_only->pid());
}

TEST_F(NvidiaScanTest, WithoutAVendorListMemoryIsUnknown) {
  auto idle = Hold({"/dev/nvidia0"}, "");
  std::vector<Device> gpus = Gpus();
  gpus[0].clear_vendor_processes_source();
  auto r = ScanDeviceHolders(options_, {});
  ASSERT_TRUE(r.ok());
  AttachHolders(*r, &gpus, nullptr);
  ASSERT_EQ(gpus[0].holders_size(), 1);
  EXPECT_EQ(gpus[0].holders(0).vram_bytes(), -1);
  EXPECT_FALSE(gpus[0].holders_vram().valid());
}

TEST_F(NvidiaScanTest, ProcessesOnlyNvmlNamesAreInspected) {
  // A process whose device files are out of sight (here: it holds none
  // under this root), listed by NVML: still a holder, with its class.
  auto hidden = Hold({}, "inst-gone");
  const int not_here = 4194000;  // above any pid_max default in use here
  ASSERT_NE(kill(not_here, 0), 0);
  std::vector<Device> gpus = Gpus();
  List(&gpus[0], hidden->pid(), 3 * kGiB);
  List(&gpus[0], not_here, kGiB);
  options_.extra_pids = {hidden->pid(), not_here};
  auto r = ScanDeviceHolders(options_, {});
  ASSERT_TRUE(r.ok());
  const ScannedProcess* h = Find(*r, hidden->pid());
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->holder.holder_class(), dcufleet::v1::HOLDER_LEFTOVER);
  EXPECT_TRUE(h->holder.state() == "S" || h->holder.state() == "R") << h->holder.state();  // seen in /proc
  const ScannedProcess* n = Find(*r, not_here);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->holder.state(), "-");
  EXPECT_TRUE(absl::StrContains(n->holder.class_reason(), "another PID namespace")) << n->holder.class_reason();
  AttachHolders(*r, &gpus, nullptr);
  ASSERT_EQ(gpus[0].holders_size(), 2);
  // Both count as live: the driver holds their contexts.
  EXPECT_EQ(gpus[0].holders_vram().bytes(), 4 * kGiB);
}

TEST_F(NvidiaScanTest, ExcludedPidsAreNotHolders) {
  // This process opens /dev/nvidia0 itself, as NVML does inside the agent.
  int fd = open((root_ + "/dev/nvidia0").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto r = ScanDeviceHolders(options_, {});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(Find(*r, getpid()), nullptr);
  options_.exclude_pids = {getpid()};
  options_.extra_pids = {getpid()};
  r = ScanDeviceHolders(options_, {});
  close(fd);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, getpid()), nullptr);
}

}  // namespace
}  // namespace dcu::agent
