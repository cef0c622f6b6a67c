// dcuctl node reap end to end: a real process carrying the marker of an
// instance that no longer exists holds the node's /dev/kfd (inside a fixture
// root); the agent classifies it as a leftover, `dcuctl node reap` ends it and
// reports it, and an unmanaged holder is left alone unless asked.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;

TEST(ReapE2ETest, LeftoverIsReapedUnmanagedIsKept) {
  testing::FleetHarness h;
  std::string root = h.Join("root");
  std::filesystem::copy(testing::SourceDir() + "/tests/fixtures/sysfs/k100ai-8x/root", root,
                        std::filesystem::copy_options::recursive);
  std::string kfd = root + "/dev/kfd";
  std::string render = root + "/dev/dri/renderD129";  // device 1
  std::string hold = absl::StrCat("exec 3<'", kfd, "' 4<'", render, "'; exec sleep 120");
  // A worker of an ended instance (its parent is gone) and someone else's job.
  testing::ChildProcess leftover({"/bin/bash", "-c", hold}, h.Join("l.log"),
                                 {{"DCUFLEET_INSTANCE", "gone-instance-1"}});
  testing::ChildProcess unmanaged({"/bin/bash", "-c", hold}, h.Join("u.log"));
  // What KFD shows for every process with /dev/kfd open: its VRAM per GPU.
  std::string gpu1 = testing::ReadFileOrEmpty(root + "/sys/class/kfd/kfd/topology/nodes/2/gpu_id");
  while (!gpu1.empty() && gpu1.back() == '\n') gpu1.pop_back();
  for (pid_t pid : {leftover.pid(), unmanaged.pid()}) {
    std::string dir = absl::StrCat(root, "/sys/class/kfd/kfd/proc/", pid);
    std::filesystem::create_directories(dir);
    std::ofstream(absl::StrCat(dir, "/vram_", gpu1)) << (2LL << 30) << "\n";
  }
  ASSERT_TRUE(h.StartController({"--status-interval", "0.5"}));
  h.StartAgent("node-k100", {"--root", root, "--proc_root", "/proc", "--container-cli", "none",
                             "--device_probe", "sysfs_kfd"});
  ASSERT_TRUE(h.WaitNodeState("node-k100", "NODE_READY", 20)) << h.Logs();

  // Both holders are visible, classified.
  testing::CmdResult d;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        d = h.Dcuctl({"describe", "node", "node-k100"});
        return d.out.find(absl::StrCat("pid ", leftover.pid())) != std::string::npos &&
               d.out.find(absl::StrCat("pid ", unmanaged.pid())) != std::string::npos;
      },
      absl::Seconds(20)))
      << d.out << h.Logs();
  EXPECT_THAT(d.out, HasSubstr("leftover"));
  EXPECT_THAT(d.out, HasSubstr("unmanaged"));

  // A dry run ends nothing.
  testing::CmdResult dry = h.Dcuctl({"node", "reap", "node-k100", "--dry-run", "-o", "json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_TRUE(leftover.Running());

  testing::CmdResult reap = h.Dcuctl({"node", "reap", "node-k100", "-o", "json"});
  ASSERT_EQ(reap.exit_code, 0) << reap.err << h.Logs();
  nlohmann::json j = nlohmann::json::parse(reap.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << reap.out;
  EXPECT_THAT(reap.out, HasSubstr(absl::StrCat(leftover.pid())));
  EXPECT_TRUE(testing::WaitFor([&] { return !leftover.Running(); }, absl::Seconds(15)));
  EXPECT_TRUE(unmanaged.Running());
  // The reap is an event on the node.
  auto events = h.Dcuctl({"describe", "node", "node-k100"});
  EXPECT_EQ(events.exit_code, 0);
}

}  // namespace
}  // namespace dcu
