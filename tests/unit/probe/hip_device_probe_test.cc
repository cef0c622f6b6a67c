#include "agent/probe/hip_device_probe.h"

#include <dirent.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "agent/probe/findings.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

constexpr char kTwoDevices[] =
    "0000:07:00.0,5153960755,68702699520,gfx928:sramecc-:xnack-;"
    "0000:0a:00.0,60000000000,68702699520,gfx928";

// Processes whose cmdline mentions `needle` (to prove a hung helper was
// killed).
int CountProcesses(const std::string& needle) {
  int n = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (s.find(needle) != std::string::npos && dcu::testing::ProcState(atoi(e->d_name)) != 'Z') ++n;
  }
  if (d) closedir(d);
  return n;
}

// A private copy of the hanging library, so that counting processes that
// use it is not confused by other tests running in parallel.
std::string PrivateHangLib(const dcu::testing::TempDir& dir) {
  std::string p = dir.path() + "/libamdhip64.so";
  std::filesystem::copy_file(FAKE_HIP_HANG_LIB, p);
  return p;
}

HipProbeOptions Options(const std::string& lib, common::Clock* clock) {
  HipProbeOptions o;
  o.memprobe_path = DCU_MEMPROBE;
  o.hip_library = lib;
  o.clock = clock;
  return o;
}

TEST(HipDeviceProbeTest, DeviceViewFromTheHelper) {
  setenv("FAKE_HIP_DEVICES", kTwoDevices, 1);
  setenv("HIP_VISIBLE_DEVICES", "1", 1);  // must not narrow the helper's view
  common::FakeClock clock;
  HipDeviceProbe probe(Options(FAKE_HIP_GOOD, &clock));
  auto r = probe.Probe();
  unsetenv("HIP_VISIBLE_DEVICES");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 2u);
  const auto& d = r->devices[0];
  EXPECT_EQ(d.index(), 0);
  EXPECT_EQ(d.pci_bus(), "0000:07:00.0");
  EXPECT_EQ(d.device_free().bytes(), 5153960755ll);
  EXPECT_EQ(d.device_total().bytes(), 68702699520ll);
  EXPECT_EQ(d.device_free().source(), "hip:hipMemGetInfo");
  EXPECT_EQ(d.device_free().read_at_ms(), absl::ToUnixMillis(clock.Now()));
  EXPECT_EQ(d.arch(), "gfx928");  // features stripped from gcnArchName
  EXPECT_EQ(d.arch_source(), "hip:gcnArchName");
  EXPECT_EQ(r->devices[1].device_free().bytes(), 60000000000ll);
}

TEST(HipDeviceProbeTest, CachesForTtlAndReprobesOnDemand) {
  setenv("FAKE_HIP_DEVICES", kTwoDevices, 1);
  common::FakeClock clock;
  HipProbeOptions o = Options(FAKE_HIP_GOOD, &clock);
  o.ttl = absl::Seconds(30);
  HipDeviceProbe probe(o);
  ASSERT_TRUE(probe.Probe().ok());
  ASSERT_TRUE(probe.Probe().ok());
  EXPECT_EQ(probe.runs(), 1);
  // Figures change on the device; the cache still answers until the TTL.
  setenv("FAKE_HIP_DEVICES", "0000:07:00.0,1000,68702699520,gfx928", 1);
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(probe.Probe()->devices[0].device_free().bytes(), 5153960755ll);
  EXPECT_EQ(probe.runs(), 1);
  clock.Advance(absl::Seconds(25));
  EXPECT_EQ(probe.Probe()->devices[0].device_free().bytes(), 1000);
  EXPECT_EQ(probe.runs(), 2);
  setenv("FAKE_HIP_DEVICES", "0000:07:00.0,2000,68702699520,gfx928", 1);
  probe.Invalidate();  // e.g. after a reap
  EXPECT_EQ(probe.Probe()->devices[0].device_free().bytes(), 2000);
  EXPECT_EQ(probe.runs(), 3);
}

TEST(HipDeviceProbeTest, HungRuntimeIsKilledAndReported) {
  setenv("FAKE_HIP_DEVICES", kTwoDevices, 1);
  common::FakeClock clock;
  dcu::testing::TempDir dir;
  const std::string lib = PrivateHangLib(dir);
  HipProbeOptions o = Options(lib, &clock);
  o.timeout = absl::Seconds(1);
  HipDeviceProbe probe(o);
  auto r = probe.Probe();
  // Device 0 answered before the hang; device 1's hipMemGetInfo never did.
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].device_free().bytes(), 5153960755ll);
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].code(), kProbeTimeout);
  EXPECT_TRUE(absl::StrContains(r->findings[0].message(), "hipMemGetInfo device 1")) << r->findings[0].message();
  // The helper is gone; this process carries on.
  EXPECT_EQ(CountProcesses(lib), 0);
  // The failure is cached: a hung runtime is not re-run every cycle.
  ASSERT_TRUE(probe.Probe().ok());
  EXPECT_EQ(probe.runs(), 1);
}

TEST(HipDeviceProbeTest, HangBeforeAnyDeviceIsDeadlineExceeded) {
  setenv("FAKE_HIP_DEVICES", kTwoDevices, 1);
  setenv("FAKE_HIP_HANG_AT", "0", 1);
  dcu::testing::TempDir dir;
  const std::string lib = PrivateHangLib(dir);
  HipProbeOptions o = Options(lib, nullptr);
  o.timeout = absl::Milliseconds(500);
  HipDeviceProbe probe(o);
  auto r = probe.Probe();
  unsetenv("FAKE_HIP_HANG_AT");
  ASSERT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "hipMemGetInfo device 0")) << r.status();
  EXPECT_EQ(CountProcesses(lib), 0);
}

TEST(HipDeviceProbeTest, MissingHipLibraryIsUnavailable) {
  HipDeviceProbe probe(Options("/nonexistent/libamdhip64.so", nullptr));
  auto r = probe.Probe();
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "cannot load")) << r.status();
}

TEST(HipDeviceProbeTest, MissingHelperIsUnavailable) {
  HipProbeOptions o;
  o.memprobe_path = "/nonexistent/dcu-memprobe";
  HipDeviceProbe probe(o);
  EXPECT_TRUE(absl::IsUnavailable(probe.Probe().status()));
}

TEST(ParseMemprobeOutputTest, TimeoutBeforeAnyDevice) {
  common::ProcessOutput out;
  out.timed_out = true;
  out.stdout_data = "{\"probe\":\"dcu-memprobe\"}\n";
  out.stderr_data = "step dlopen device -1\nstep hipGetDeviceCount device -1\n";
  auto r = ParseMemprobeOutput(out, absl::Seconds(20), 0);
  ASSERT_TRUE(absl::IsDeadlineExceeded(r.status()));
  EXPECT_TRUE(absl::StrContains(r.status().message(), "hipGetDeviceCount")) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "20s")) << r.status();
}

TEST(ParseMemprobeOutputTest, GarbageLinesAndArchesAreFindings) {
  common::ProcessOutput out;
  out.exit_code = 0;
  out.stdout_data =
      "not json\n{\"device_count\":1}\n"
      "{\"index\":0,\"pci_bus\":\"0000:07:00.0\",\"arch\":\"gfx18446744073709551615\",\"free\":1,\"total\":2}\n"
      "{\"index\":\"x\"}\n{\"done\":true}\n";
  auto r = ParseMemprobeOutput(out, absl::Seconds(20), 0);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].arch(), "");
  EXPECT_EQ(r->devices[0].findings(0).code(), kArchRejected);
  EXPECT_EQ(r->findings.size(), 2u);  // the non-JSON line and the bad index
}

}  // namespace
}  // namespace dcu::agent
