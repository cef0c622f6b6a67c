#include "agent/procscan/proc_scanner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/probe/sysfs_kfd_device_probe.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using dcu::testing::ChildProcess;
using dcu::testing::CopyFixture;
using dcu::testing::TempDir;
using dcufleet::v1::HolderClass;

// Real processes hold files that stand for device nodes inside a copied
// fixture root; the scan reads the live /proc.
class ProcScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = CopyFixture("k100ai-8x", tmp_.path());
    options_.root = root_;
    options_.proc_root = "/proc";
  }
  // A shell that opens fds on the given root-relative files, says "ready" and
  // sleeps (as `sleep`, so cmdline is recognisable).
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
  const ScannedProcess* Find(const ProcScanResult& r, int pid) {
    for (const auto& p : r.processes) {
      if (p.holder.pid() == pid) return &p;
    }
    return nullptr;
  }
  TempDir tmp_;
  std::string root_;
  ProcScanOptions options_;
};

TEST_F(ProcScanTest, ClassifiesManagedAndUnmanagedHolders) {
  auto managed = Hold({"/dev/kfd", "/dev/dri/renderD129"}, "inst-live");
  auto unmanaged = Hold({"/dev/kfd"}, "");
  auto bystander = Hold({"/sys/module/hydcu/version"}, "inst-live");  // no device
  auto r = ScanDeviceHolders(options_, {"inst-live"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->processes_scanned, 3);

  const ScannedProcess* m = Find(*r, managed->pid());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->holder.holder_class(), dcufleet::v1::HOLDER_MANAGED);
  EXPECT_EQ(m->holder.instance_id(), "inst-live");
  EXPECT_TRUE(m->holds_kfd);
  EXPECT_EQ(m->render_minors, std::vector<int>{129});
  EXPECT_EQ(m->holder.comm(), "sleep");
  EXPECT_EQ(m->holder.cmdline(), "sleep 1000");
  EXPECT_EQ(m->holder.ppid(), getpid());
  EXPECT_TRUE(m->holder.parent_alive());
  EXPECT_GT(m->holder.start_time_ticks(), 0u);
  EXPECT_EQ(m->holder.state(), "S");
  ASSERT_EQ(m->holder.device_paths_size(), 2);
  EXPECT_EQ(m->holder.device_paths(0), "/dev/kfd");  // seen from the root

  const ScannedProcess* u = Find(*r, unmanaged->pid());
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->holder.holder_class(), dcufleet::v1::HOLDER_UNMANAGED);
  EXPECT_EQ(Find(*r, bystander->pid()), nullptr);
}

// /proc/PID/cmdline as it is (NUL-separated), empty when unreadable.
std::string ReadCmdline(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(ProcScanTest, ChildOfKilledParentIsLeftover) {
  // A launcher (marker of instance 'inst-old') starts a worker that keeps
  // the device, as vLLM's tensor-parallel workers do; then the launcher is
  // killed and the instance is no longer running.
  std::string script = absl::StrCat("exec 3<'", root_, "/dev/kfd'; exec 4<'", root_,
                                    "/dev/dri/renderD128'; sleep 1000 & echo $!; wait");
  ChildProcess launcher(script, {{kInstanceMarkerEnv, "inst-old"}});
  int worker = std::stoi(launcher.ReadLine());
  // The pid is echoed right after the fork: wait until the worker has
  // exec'd sleep, or the scan may read its environment mid-exec (empty).
  const std::string sleep_cmdline("sleep\0" "1000\0", 11);
  for (int i = 0; i < 500 && ReadCmdline(worker) != sleep_cmdline; ++i) usleep(10 * 1000);
  ASSERT_EQ(ReadCmdline(worker), sleep_cmdline);
  ASSERT_EQ(kill(launcher.pid(), SIGKILL), 0);
  launcher.Wait();

  auto r = ScanDeviceHolders(options_, {"inst-other"});
  ASSERT_TRUE(r.ok());
  const ScannedProcess* w = Find(*r, worker);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->holder.holder_class(), dcufleet::v1::HOLDER_LEFTOVER) << w->holder.class_reason();
  EXPECT_EQ(w->holder.instance_id(), "inst-old") << w->holder.cmdline();
  EXPECT_NE(w->holder.ppid(), launcher.pid());
  EXPECT_TRUE(absl::StrContains(w->holder.class_reason(), "not a running instance"));
  EXPECT_EQ(Find(*r, launcher.pid()), nullptr);
  kill(worker, SIGKILL);
}

TEST_F(ProcScanTest, ZombieWithKfdMemoryIsReportedWithParent) {
  pid_t z = fork();
  if (z == 0) _exit(0);
  ASSERT_GT(z, 0);
  // Wait until it is a zombie (we do not reap it).
  for (int i = 0; i < 200 && dcu::testing::ProcState(z) != 'Z'; ++i) usleep(5000);
  ASSERT_EQ(dcu::testing::ProcState(z), 'Z');
  // KFD still attributes VRAM to it on device 0 (gpu_id 50000).
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", z, "/vram_50000"), "8589934592\n");

  auto r = ScanDeviceHolders(options_, {});
  waitpid(z, nullptr, 0);
  ASSERT_TRUE(r.ok());
  const ScannedProcess* p = Find(*r, z);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->holder.holder_class(), dcufleet::v1::HOLDER_ZOMBIE);
  EXPECT_EQ(p->holder.state(), "Z");
  EXPECT_EQ(p->holder.ppid(), getpid());
  EXPECT_FALSE(p->holder.parent_cmdline().empty());
  ASSERT_EQ(p->kfd_vram.size(), 1u);
  EXPECT_EQ(p->kfd_vram[0], (std::pair<uint32_t, int64_t>{50000, 8589934592}));
}

// KFD's record of a process that has left /proc (seed 000's 59 GiB) is a
// holder of its own class: no live process, no signal reaches it.
TEST_F(ProcScanTest, AKfdRecordWithNoProcessIsAnExitedHolder) {
  // pid_max: pids are below it, so no process has this one.
  std::ifstream in("/proc/sys/kernel/pid_max");
  int gone = 0;
  ASSERT_TRUE(in >> gone);
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", gone, "/vram_50000"), "63350767616\n");
  auto r = ScanDeviceHolders(options_, {});
  ASSERT_TRUE(r.ok()) << r.status();
  const ScannedProcess* p = Find(*r, gone);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->holder.holder_class(), dcufleet::v1::HOLDER_EXITED) << p->holder.class_reason();
  EXPECT_EQ(p->holder.state(), "?");
  ASSERT_EQ(p->kfd_vram.size(), 1u);
  EXPECT_EQ(p->kfd_vram[0].second, 63350767616);
}

TEST_F(ProcScanTest, FilesOutsideTheRootDoNotCount) {
  // The same names, but outside the fixture: not this root's devices.
  TempDir other;
  dcu::testing::WriteFile(other.path() + "/dev/kfd", "");
  ChildProcess c(absl::StrCat("exec 3<'", other.path(), "/dev/kfd'; echo ready; exec sleep 1000"), {});
  ASSERT_EQ(c.ReadReady(), "ready");
  auto r = ScanDeviceHolders(options_, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, c.pid()), nullptr);
}

TEST_F(ProcScanTest, AttributesHoldersAndVramToDevices) {
  auto a = Hold({"/dev/kfd", "/dev/dri/renderD128", "/dev/dri/renderD129"}, "inst-a");
  auto b = Hold({"/dev/kfd"}, "");
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", a->pid(), "/vram_50000"), "1073741824\n");
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", a->pid(), "/vram_51111"), "2147483648\n");
  SysfsKfdDeviceProbe probe(root_);
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok());
  auto r = ScanDeviceHolders(options_, {"inst-a"});
  ASSERT_TRUE(r.ok());
  std::vector<dcufleet::v1::ProcessHolder> unattributed;
  AttachHolders(*r, &*devs, &unattributed);
  ASSERT_EQ((*devs)[0].holders_size(), 1);
  EXPECT_EQ((*devs)[0].holders(0).pid(), a->pid());
  EXPECT_EQ((*devs)[0].holders(0).vram_bytes(), 1073741824);
  EXPECT_EQ((*devs)[0].holders(0).vram_source(), absl::StrCat("kfd:proc/", a->pid(), "/vram_50000"));
  EXPECT_EQ((*devs)[0].holders_vram().bytes(), 1073741824);
  EXPECT_EQ((*devs)[1].holders(0).vram_bytes(), 2147483648);
  EXPECT_EQ((*devs)[2].holders_size(), 0);
  // /dev/kfd alone names no device.
  ASSERT_EQ(unattributed.size(), 1u);
  EXPECT_EQ(unattributed[0].pid(), b->pid());
}

TEST(ProcScanRecordedTreeTest, LinksInARecordedProcAreTakenAsTheyAre) {
  // A recorded /proc inside the root: its links say "/dev/kfd" as they did
  // on the host they were recorded on.
  TempDir tmp;
  std::string root = tmp.path() + "/root";
  std::string p = root + "/proc/4121";
  std::filesystem::create_directories(p + "/fd");
  dcu::testing::WriteFile(p + "/stat", "4121 (python3) S 1 4121 4121 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
  dcu::testing::WriteFile(p + "/cmdline", std::string("python3\0-m\0vllm.entrypoints.openai.api_server\0", 45));
  dcu::testing::WriteFile(p + "/environ", std::string("A=1\0DCUFLEET_INSTANCE=inst-9\0", 29));
  std::filesystem::create_symlink("/dev/kfd", p + "/fd/3");
  std::filesystem::create_symlink("/dev/dri/renderD130", p + "/fd/4");
  std::filesystem::create_symlink("pipe:[123]", p + "/fd/5");
  ProcScanOptions o;
  o.root = root;
  auto r = ScanDeviceHolders(o, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->processes.size(), 1u);
  const auto& h = r->processes[0].holder;
  EXPECT_EQ(h.pid(), 4121);
  EXPECT_EQ(h.cmdline(), "python3 -m vllm.entrypoints.openai.api_server");
  EXPECT_EQ(h.holder_class(), dcufleet::v1::HOLDER_LEFTOVER);
  EXPECT_EQ(h.start_time_ticks(), 777u);
  EXPECT_FALSE(h.parent_alive());  // reparented to init
  EXPECT_EQ(r->processes[0].render_minors, std::vector<int>{130});
}

TEST(ClassifyHolderTest, Classes) {
  std::string why;
  EXPECT_EQ(ClassifyHolder("Z", "inst-1", {"inst-1"}, &why), dcufleet::v1::HOLDER_ZOMBIE);
  EXPECT_EQ(ClassifyHolder("S", "inst-1", {"inst-1"}, &why), dcufleet::v1::HOLDER_MANAGED);
  EXPECT_EQ(ClassifyHolder("R", "inst-1", {"inst-2"}, &why), dcufleet::v1::HOLDER_LEFTOVER);
  EXPECT_EQ(ClassifyHolder("D", "", {"inst-2"}, &why), dcufleet::v1::HOLDER_UNMANAGED);
}

}  // namespace
}  // namespace dcu::agent
