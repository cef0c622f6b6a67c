// The "cuda" probe: dcu-memprobe --runtime cuda as a real child process,
// loading a libcuda.so.1 built by the tests (tests/node_truth/fake_cuda.c),
// and the fake NVML for the helper's own context.
#include <dirent.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "agent/probe/findings.h"
#include "agent/probe/hip_device_probe.h"
#include "agent/probe/probe_registry.h"
#include "common/clock.h"
#include "common/units.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using common::kGiB;
using common::kMiB;

constexpr char kTwoGpus[] =
    "0000:19:00.0,128000000000,150110011392,90,1f0e2d3c4b5a69788796a5b4c3d2e1f0;"
    "0000:3B:00.0,149000000000,150110011392,90,2f0e2d3c4b5a69788796a5b4c3d2e1f0";
constexpr char kNvmlGpus[] =
    "00000000:19:00.0,150754820096,553648128,0,0,90,GPU-1f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0,NVIDIA H200;"
    "00000000:3B:00.0,150754820096,553648128,0,1,90,GPU-2f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0,NVIDIA H200";

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

HipProbeOptions CudaOptions(const std::string& lib, common::Clock* clock) {
  HipProbeOptions o;
  o.runtime = "cuda";
  o.memprobe_path = DCU_MEMPROBE;
  o.cuda_library = lib;
  o.nvml_library = FAKE_NVML_GOOD;
  o.clock = clock;
  return o;
}

TEST(CudaDeviceProbeTest, DeviceViewThroughTheCudaDriverApi) {
  setenv("FAKE_CUDA_DEVICES", kTwoGpus, 1);
  setenv("FAKE_NVML_DEVICES", kNvmlGpus, 1);
  // What NVML says the helper's own context takes on GPU 0.
  setenv("FAKE_NVML_PROCS", "0:self:524288000", 1);
  common::FakeClock clock;
  HipDeviceProbe probe(CudaOptions(FAKE_CUDA_GOOD, &clock));
  EXPECT_EQ(probe.Name(), "cuda");
  auto r = probe.Probe();
  unsetenv("FAKE_NVML_PROCS");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 2u);
  const auto& d = r->devices[0];
  EXPECT_EQ(d.index(), 0);
  EXPECT_EQ(d.vendor(), "nvidia");
  EXPECT_EQ(d.pci_bus(), "0000:19:00.0");
  EXPECT_EQ(r->devices[1].pci_bus(), "0000:3b:00.0");
  // The same spelling NVML uses, so the two backends match by it.
  EXPECT_EQ(d.unique_id(), "GPU-1f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  EXPECT_EQ(d.product_name(), "NVIDIA H200");
  EXPECT_EQ(d.arch(), "sm_90");
  EXPECT_EQ(d.arch_source(), "cuda:cuDeviceGetAttribute(compute_capability)");
  EXPECT_EQ(d.device_free().bytes(), 128000000000ll);
  EXPECT_EQ(d.device_total().bytes(), 150110011392ll);
  EXPECT_EQ(d.device_free().source(), "cuda:cuMemGetInfo");
  EXPECT_EQ(d.device_free().read_at_ms(), absl::ToUnixMillis(clock.Now()));
  // The helper's own context, measured by NVML while it existed.
  ASSERT_TRUE(d.device_self_used().valid());
  EXPECT_EQ(d.device_self_used().bytes(), 500 * kMiB);
  EXPECT_TRUE(absl::StrContains(d.device_self_used().source(), "nvml:nvmlDeviceGetComputeRunningProcesses_v3"));
  // GPU 1 had no context of the helper listed: no figure, not zero.
  EXPECT_FALSE(r->devices[1].device_self_used().valid());
}

TEST(CudaDeviceProbeTest, HungCuInitIsKilledAndTheCallerCarriesOn) {
  setenv("FAKE_CUDA_DEVICES", kTwoGpus, 1);
  dcu::testing::TempDir dir;
  // A private copy, so counting its users is not confused by other tests.
  const std::string lib = dir.path() + "/libcuda.so.1";
  std::filesystem::copy_file(FAKE_CUDA_HANG_LIB, lib);
  HipProbeOptions o = CudaOptions(lib, nullptr);
  o.timeout = absl::Milliseconds(500);
  HipDeviceProbe probe(o);
  auto r = probe.Probe();
  ASSERT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "hung in cuInit")) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "the agent is unaffected")) << r.status();
  EXPECT_EQ(CountProcesses(lib), 0);
  // The failure is cached like any other (a wedged driver is not re-run
  // every cycle).
  EXPECT_TRUE(absl::IsDeadlineExceeded(probe.Probe().status()));
  EXPECT_EQ(probe.runs(), 1);
}

TEST(CudaDeviceProbeTest, MissingCudaLibraryIsUnavailable) {
  HipDeviceProbe probe(CudaOptions("/nonexistent/libcuda.so.1", nullptr));
  auto r = probe.Probe();
  ASSERT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "cannot load '/nonexistent/libcuda.so.1'")) << r.status();
}

TEST(CudaDeviceProbeTest, RegistryPassesLibrariesToTheHelper) {
  setenv("FAKE_CUDA_DEVICES", kTwoGpus, 1);
  auto reg = DeviceProbeRegistry::WithBuiltins();
  ProbeContext ctx;
  ctx.memprobe_path = DCU_MEMPROBE;
  ctx.cuda_library = FAKE_CUDA_GOOD;
  ctx.nvml_library = "none";
  auto p = reg.Create("cuda", ctx);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Name(), "cuda");
  auto r = (*p)->Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices.size(), 2u);
  EXPECT_FALSE(r->devices[0].device_self_used().valid());  // NVML lookup off
}

TEST(CudaDeviceProbeTest, ParsesPerDeviceErrorsAndNoDevices) {
  common::ProcessOutput out;
  out.stdout_data =
      "{\"probe\":\"dcu-memprobe\",\"runtime\":\"cuda\"}\n{\"device_count\":2}\n"
      "{\"index\":0,\"pci_bus\":\"0000:19:00.0\",\"arch\":\"sm_90\",\"free\":1,\"total\":2}\n"
      "{\"index\":1,\"pci_bus\":\"0000:3b:00.0\",\"error\":\"cuDevicePrimaryCtxRetain returned 2 "
      "(CUDA_ERROR_OUT_OF_MEMORY)\"}\n{\"done\":true}\n";
  auto r = ParseMemprobeOutput(out, absl::Seconds(20), 0, "cuda");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_FALSE(r->devices[1].device_free().valid());
  ASSERT_EQ(r->devices[1].findings_size(), 1);
  EXPECT_EQ(r->devices[1].findings(0).field(), "cuda:cuMemGetInfo");
  EXPECT_TRUE(absl::StrContains(r->devices[1].findings(0).message(), "CUDA_ERROR_OUT_OF_MEMORY"));

  out.stdout_data = "{\"device_count\":0}\n{\"done\":true}\n";
  auto none = ParseMemprobeOutput(out, absl::Seconds(20), 0, "cuda");
  ASSERT_TRUE(absl::IsNotFound(none.status()));
  EXPECT_TRUE(absl::StrContains(none.status().message(), "CUDA sees no devices"));
}

}  // namespace
}  // namespace dcu::agent
