#include "agent/reap/reaper.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/probe/sysfs_kfd_device_probe.h"
#include "agent/procscan/proc_scanner.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using dcu::testing::ChildProcess;
using dcu::testing::Ended;
using dcu::testing::TempDir;
using dcufleet::v1::NodeInventory;
using dcufleet::v1::ReapAction;
using dcufleet::v1::ReapReport;

// Real processes holding the fixture's device files; the inventory the
// reaper acts on comes from the real scanner.
class ReaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dcu::testing::CopyFixture("k100ai-8x", tmp_.path());
    options_.grace = absl::Milliseconds(300);
    options_.kill_wait = absl::Seconds(5);
  }
  // ignore_term: the process ignores SIGTERM (needs SIGKILL).
  std::unique_ptr<ChildProcess> Hold(const std::string& marker, bool ignore_term = false) {
    std::string script = absl::StrCat(ignore_term ? "trap '' TERM; " : "", "exec 3<'", root_, "/dev/kfd'; exec 4<'",
                                      root_, "/dev/dri/renderD128'; echo ready; exec sleep 1000");
    std::map<std::string, std::string> env;
    if (!marker.empty()) env[kInstanceMarkerEnv] = marker;
    auto c = std::make_unique<ChildProcess>(script, env);
    EXPECT_EQ(c->ReadReady(), "ready");
    return c;
  }
  NodeInventory Inventory(const absl::flat_hash_set<std::string>& live) {
    NodeInventory inv;
    SysfsKfdDeviceProbe probe(root_);
    auto devs = probe.Enumerate();
    EXPECT_TRUE(devs.ok());
    ProcScanOptions o;
    o.root = root_;
    o.proc_root = "/proc";
    auto scan = ScanDeviceHolders(o, live);
    EXPECT_TRUE(scan.ok());
    std::vector<dcufleet::v1::ProcessHolder> un;
    AttachHolders(*scan, &*devs, &un);
    for (auto& d : *devs) *inv.add_devices() = d;
    for (auto& h : un) *inv.add_unattributed_holders() = h;
    return inv;
  }
  std::vector<ReapAction> ActionsFor(const ReapReport& r, int pid) {
    std::vector<ReapAction> out;
    for (const auto& a : r.actions()) {
      if (a.pid() == pid) out.push_back(a);
    }
    return out;
  }
  TempDir tmp_;
  std::string root_;
  ReapOptions options_;
};

TEST_F(ReaperTest, LeftoverEndsOnSigterm) {
  auto leftover = Hold("inst-old");
  auto managed = Hold("inst-live");
  ReapReport r = Reaper().Reap(Inventory({"inst-live"}), options_);
  leftover->Wait();  // reaps the zombie; proves it ended
  auto a = ActionsFor(r, leftover->pid());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].action(), "sigterm");
  EXPECT_EQ(a[0].result(), "ended");
  EXPECT_EQ(a[0].holder_class(), dcufleet::v1::HOLDER_LEFTOVER);
  EXPECT_TRUE(absl::StrContains(a[0].reason(), "inst-old"));
  auto m = ActionsFor(r, managed->pid());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].action(), "skip");
  EXPECT_FALSE(Ended(managed->pid()));
}

TEST_F(ReaperTest, LeftoverIgnoringSigtermGetsSigkill) {
  auto stubborn = Hold("inst-old", /*ignore_term=*/true);
  ReapReport r = Reaper().Reap(Inventory({}), options_);
  auto a = ActionsFor(r, stubborn->pid());
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].action(), "sigterm");
  EXPECT_EQ(a[0].result(), "still running after grace");
  EXPECT_EQ(a[1].action(), "sigkill");
  EXPECT_EQ(a[1].result(), "ended");
  EXPECT_TRUE(Ended(stubborn->pid()));
  EXPECT_TRUE(WIFSIGNALED(stubborn->Wait()));
}

TEST_F(ReaperTest, UnmanagedOnlyWithTheFlag) {
  auto stranger = Hold("");
  ReapReport r1 = Reaper().Reap(Inventory({}), options_);
  auto a1 = ActionsFor(r1, stranger->pid());
  ASSERT_EQ(a1.size(), 1u);
  EXPECT_EQ(a1[0].action(), "skip");
  EXPECT_TRUE(absl::StrContains(a1[0].reason(), "--include-unmanaged"));
  EXPECT_FALSE(Ended(stranger->pid()));

  options_.include_unmanaged = true;
  ReapReport r2 = Reaper().Reap(Inventory({}), options_);
  auto a2 = ActionsFor(r2, stranger->pid());
  ASSERT_EQ(a2.size(), 1u);
  EXPECT_EQ(a2[0].action(), "sigterm");
  EXPECT_EQ(a2[0].result(), "ended");
  stranger->Wait();
}

// A KFD record of a process no longer in /proc (seed 000's stranded 59 GiB)
// is reported, never offered to --include-unmanaged: there is nobody to
// signal (before, the dry run told the reader to add the flag).
TEST_F(ReaperTest, ARecordWithNoLiveProcessIsReportedNotOffered) {
  const int gone = 4194304;  // above any pid_max default: never a process
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", gone, "/vram_50000"),
                          absl::StrCat(59LL << 30, "\n"));
  for (bool include_unmanaged : {false, true}) {
    options_.include_unmanaged = include_unmanaged;
    options_.dry_run = true;
    ReapReport r = Reaper().Reap(Inventory({}), options_);
    auto a = ActionsFor(r, gone);
    ASSERT_EQ(a.size(), 1u) << r.DebugString();
    EXPECT_EQ(a[0].action(), "report");
    EXPECT_EQ(a[0].result(), "not signalled");
    EXPECT_EQ(a[0].holder_class(), dcufleet::v1::HOLDER_EXITED);
    EXPECT_TRUE(absl::StrContains(a[0].reason(), "no live process")) << a[0].reason();
    EXPECT_FALSE(absl::StrContains(a[0].reason(), "--include-unmanaged")) << a[0].reason();
  }
}

TEST_F(ReaperTest, DryRunSignalsNothing) {
  auto leftover = Hold("inst-old");
  options_.dry_run = true;
  options_.include_unmanaged = true;
  ReapReport r = Reaper().Reap(Inventory({}), options_);
  EXPECT_TRUE(r.dry_run());
  auto a = ActionsFor(r, leftover->pid());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].action(), "sigterm");
  EXPECT_EQ(a[0].result(), "dry run");
  EXPECT_TRUE(a[0].dry_run());
  EXPECT_FALSE(Ended(leftover->pid()));
}

TEST_F(ReaperTest, ZombieIsReportedWithParentNotSignalled) {
  pid_t z = fork();
  if (z == 0) _exit(0);
  for (int i = 0; i < 200 && dcu::testing::ProcState(z) != 'Z'; ++i) usleep(5000);
  dcu::testing::WriteFile(absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", z, "/vram_50000"), "4096\n");
  options_.include_unmanaged = true;
  ReapReport r = Reaper().Reap(Inventory({}), options_);
  auto a = ActionsFor(r, z);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].action(), "report");
  EXPECT_EQ(a[0].ppid(), getpid());
  EXPECT_TRUE(absl::StrContains(a[0].reason(), absl::StrCat("only its parent ", getpid())));
  EXPECT_FALSE(a[0].parent_cmdline().empty());
  EXPECT_EQ(dcu::testing::ProcState(z), 'Z');  // still there: only we can reap it
  waitpid(z, nullptr, 0);
}

TEST_F(ReaperTest, ReusedPidIsNotSignalled) {
  auto p = Hold("inst-old");
  NodeInventory inv = Inventory({});
  // Pretend the scan saw another process under this pid.
  for (auto& d : *inv.mutable_devices()) {
    for (auto& h : *d.mutable_holders()) h.set_start_time_ticks(h.start_time_ticks() + 1);
  }
  ReapReport r = Reaper().Reap(inv, options_);
  auto a = ActionsFor(r, p->pid());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].action(), "skip");
  EXPECT_EQ(a[0].result(), "pid reused by another process");
  EXPECT_FALSE(Ended(p->pid()));
}

TEST_F(ReaperTest, ReprobeReportsMemoryBeforeAndAfter) {
  auto leftover = Hold("inst-old");
  NodeInventory before = Inventory({});
  before.mutable_devices(0)->mutable_device_free()->set_bytes(4 << 20);
  before.mutable_devices(0)->mutable_device_free()->set_valid(true);
  before.mutable_devices(0)->set_unreclaimed_bytes(0);
  int reprobes = 0;
  ReapReport r = Reaper().Reap(before, options_, [&]() -> absl::StatusOr<NodeInventory> {
    ++reprobes;
    NodeInventory after = Inventory({});
    after.mutable_devices(0)->mutable_device_free()->set_bytes(60ll << 30);
    after.mutable_devices(0)->mutable_device_free()->set_valid(true);
    return after;
  });
  EXPECT_EQ(reprobes, 1);
  ASSERT_EQ(r.memory_size(), 8);
  EXPECT_EQ(r.memory(0).device_free_before().bytes(), 4 << 20);
  EXPECT_EQ(r.memory(0).device_free_after().bytes(), 60ll << 30);
  EXPECT_TRUE(r.findings().empty());
  leftover->Wait();
}

}  // namespace
}  // namespace dcu::agent
