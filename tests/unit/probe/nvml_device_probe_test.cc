// NvmlDeviceProbe against a libnvidia-ml.so.1 built by the tests
// (tests/node_truth/fake_nvml.c), which hands out chosen figures through
// NVML's real call signatures and struct layouts.
#include "agent/probe/nvml_device_probe.h"

#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/probe/findings.h"
#include "agent/probe/pci_bus.h"
#include "agent/probe/probe_registry.h"
#include "common/clock.h"
#include "common/units.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using common::kGiB;
using common::kMiB;

constexpr char kTwoGpus[] =
    "00000000:19:00.0,150754820096,553648128,21474836480,0,90,GPU-1f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0,NVIDIA H200;"
    "00000000:3B:00.0,150754820096,553648128,0,1,90,GPU-2f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0,NVIDIA H200";

class NvmlProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_NVML_DEVICES", kTwoGpus, 1);
    unsetenv("FAKE_NVML_PROCS");
    unsetenv("FAKE_NVML_INIT_RC");
  }
  std::unique_ptr<NvmlDeviceProbe> Make(const std::string& lib) {
    NvmlOptions o;
    o.library = lib;
    o.clock = &clock_;
    auto p = NvmlDeviceProbe::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }
  common::FakeClock clock_;
};

TEST_F(NvmlProbeTest, HostViewOfEveryDevice) {
  setenv("FAKE_NVML_PROCS", "0:4242:21474836480;0:4343:na;1:4444:536870912", 1);
  auto probe = Make(FAKE_NVML_GOOD);
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe->Name(), "nvml");
  auto r = probe->Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->driver_version, "580.159.04");
  ASSERT_EQ(r->devices.size(), 2u);
  const auto& d = r->devices[0];
  EXPECT_EQ(d.index(), 0);
  EXPECT_EQ(d.vendor(), "nvidia");
  EXPECT_EQ(d.product_name(), "NVIDIA H200");
  EXPECT_EQ(d.product_name_source(), "nvml:nvmlDeviceGetName");
  EXPECT_EQ(d.unique_id(), "GPU-1f0e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  EXPECT_EQ(d.pci_bus(), "0000:19:00.0");  // NVML's 8-digit domain, spelled as sysfs does
  EXPECT_EQ(d.pci_vendor_id(), 0x10deu);
  EXPECT_EQ(d.pci_device_id(), 0x2335u);
  EXPECT_EQ(d.arch(), "sm_90");
  EXPECT_EQ(d.arch_source(), "nvml:nvmlDeviceGetCudaComputeCapability");
  ASSERT_TRUE(d.has_nvidia_minor());
  EXPECT_EQ(d.nvidia_minor(), 0);
  EXPECT_EQ(r->devices[1].nvidia_minor(), 1);
  EXPECT_EQ(r->devices[1].pci_bus(), "0000:3b:00.0");
  // v2 memory: used excludes the driver's reserved memory, which is separate.
  EXPECT_EQ(d.total().bytes(), 150754820096ll);
  EXPECT_EQ(d.total().source(), "nvml:nvmlDeviceGetMemoryInfo_v2");
  EXPECT_EQ(d.host_used().bytes(), 20 * kGiB);
  EXPECT_EQ(d.host_reserved().bytes(), 528 * kMiB);
  EXPECT_EQ(d.host_free().bytes(), 150754820096ll - 528 * kMiB - 20 * kGiB);
  EXPECT_EQ(d.host_free().read_at_ms(), absl::ToUnixMillis(clock_.Now()));
  // Processes: one with a figure, one NVML cannot measure (-1).
  EXPECT_EQ(d.vendor_processes_source(),
            "nvml:nvmlDeviceGetComputeRunningProcesses_v3+nvml:nvmlDeviceGetGraphicsRunningProcesses_v3");
  ASSERT_EQ(d.vendor_processes_size(), 2);
  EXPECT_EQ(d.vendor_processes(0).pid(), 4242);
  EXPECT_EQ(d.vendor_processes(0).vram_bytes(), 20 * kGiB);
  EXPECT_EQ(d.vendor_processes(1).pid(), 4343);
  EXPECT_EQ(d.vendor_processes(1).vram_bytes(), -1);
  EXPECT_TRUE(absl::StrContains(d.vendor_processes(1).vram_source(), "not available"));
  ASSERT_EQ(r->devices[1].vendor_processes_size(), 1);
  EXPECT_EQ(r->devices[1].vendor_processes(0).vram_bytes(), 512 * kMiB);
  EXPECT_EQ(d.findings_size(), 0);
}

TEST_F(NvmlProbeTest, OldDriverWithOnlyVersionOneCalls) {
  setenv("FAKE_NVML_PROCS", "0:777:1073741824", 1);
  auto probe = Make(FAKE_NVML_V1);
  ASSERT_NE(probe, nullptr);
  auto r = probe->Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& d = r->devices[0];
  // v1 "used" includes the reserved memory; nothing separates it.
  EXPECT_EQ(d.host_used().bytes(), 20 * kGiB + 528 * kMiB);
  EXPECT_EQ(d.host_used().source(), "nvml:nvmlDeviceGetMemoryInfo");
  EXPECT_FALSE(d.host_reserved().valid());
  // The 16-byte v1 process record is read with its own layout.
  ASSERT_EQ(d.vendor_processes_size(), 1);
  EXPECT_EQ(d.vendor_processes(0).pid(), 777);
  EXPECT_EQ(d.vendor_processes(0).vram_bytes(), kGiB);
  EXPECT_EQ(d.vendor_processes_source(), "nvml:nvmlDeviceGetComputeRunningProcesses");
  // No PCI or compute capability calls in this library: left out, no guess.
  EXPECT_TRUE(d.pci_bus().empty());
  EXPECT_TRUE(d.arch().empty());
}

TEST_F(NvmlProbeTest, MissingLibraryIsUnavailable) {
  NvmlOptions o;
  o.library = "/nonexistent/libnvidia-ml.so.1";
  auto p = NvmlDeviceProbe::Create(o);
  ASSERT_TRUE(absl::IsUnavailable(p.status())) << p.status();
  EXPECT_TRUE(absl::StrContains(p.status().message(), "/nonexistent/libnvidia-ml.so.1")) << p.status();
}

TEST_F(NvmlProbeTest, InitFailureCarriesNvmlErrorString) {
  setenv("FAKE_NVML_INIT_RC", "9", 1);
  auto probe = Make(FAKE_NVML_GOOD);
  ASSERT_NE(probe, nullptr);
  auto r = probe->Probe();
  ASSERT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "9 (Driver Not Loaded)")) << r.status();
  // Retried at the next probe once the driver is there.
  unsetenv("FAKE_NVML_INIT_RC");
  EXPECT_TRUE(probe->Probe().ok());
}

TEST_F(NvmlProbeTest, ImpossibleComputeCapabilityIsRejectedAndRecorded) {
  setenv("FAKE_NVML_DEVICES", "00000000:19:00.0,150754820096,0,0,0,1000,GPU-x,NVIDIA H200", 1);
  auto probe = Make(FAKE_NVML_GOOD);
  ASSERT_NE(probe, nullptr);
  auto r = probe->Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& d = r->devices[0];
  EXPECT_TRUE(d.arch().empty());
  ASSERT_EQ(d.findings_size(), 1);
  EXPECT_EQ(d.findings(0).code(), kArchRejected);
  EXPECT_TRUE(absl::StrContains(d.findings(0).message(), "sm_1000")) << d.findings(0).message();
}

TEST_F(NvmlProbeTest, NoDevicesIsNotFound) {
  setenv("FAKE_NVML_DEVICES", "", 1);
  auto probe = Make(FAKE_NVML_GOOD);
  ASSERT_NE(probe, nullptr);
  EXPECT_TRUE(absl::IsNotFound(probe->Probe().status()));
}

TEST_F(NvmlProbeTest, RegisteredAsNvml) {
  auto reg = DeviceProbeRegistry::WithBuiltins();
  ASSERT_TRUE(reg.Has("nvml"));
  ASSERT_TRUE(reg.Has("cuda"));
  ProbeContext ctx;
  ctx.nvml_library = FAKE_NVML_GOOD;
  auto p = reg.Create("nvml", ctx);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Name(), "nvml");
  ctx.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  EXPECT_TRUE(absl::IsUnavailable(reg.Create("nvml", ctx).status()));
}

TEST(PciBusTest, NormalizesTheSpellings) {
  EXPECT_EQ(NormalizePciBusId("00000000:19:00.0"), "0000:19:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:19:00"), "0000:19:00.0");
  EXPECT_EQ(NormalizePciBusId("00010000:01:02.3"), "00010000:01:02.3");
  EXPECT_EQ(NormalizePciBusId(" 0000:07:00.0\n"), "0000:07:00.0");
  EXPECT_EQ(NormalizePciBusId("not-a-bus"), "not-a-bus");
  EXPECT_EQ(NormalizePciBusId("0000:zz:00.0"), "0000:zz:00.0");
}

}  // namespace
}  // namespace dcu::agent
