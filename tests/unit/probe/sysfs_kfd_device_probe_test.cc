#include "agent/probe/sysfs_kfd_device_probe.h"

#include <sys/stat.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/probe/findings.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using dcu::testing::CopyFixture;
using dcu::testing::FixtureRoot;
using dcu::testing::TempDir;
using dcufleet::v1::Device;

bool HasFinding(const Device& d, absl::string_view code, absl::string_view text = "") {
  for (const auto& f : d.findings()) {
    if (f.code() == code && absl::StrContains(f.message(), text)) return true;
  }
  return false;
}

TEST(SysfsKfdDeviceProbeTest, K100AiEightDevices) {
  SysfsKfdDeviceProbe probe(FixtureRoot("k100ai-8x"));
  auto r = probe.Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 8u);
  EXPECT_EQ(r->driver_version, "hydcu 6.3.14-V1.12.0");
  const Device& d = r->devices[0];
  EXPECT_EQ(d.index(), 0);
  EXPECT_EQ(d.vendor(), "hygon");
  EXPECT_EQ(d.pci_vendor_id(), 0x1d94u);
  EXPECT_EQ(d.pci_device_id(), 0x6210u);
  EXPECT_EQ(d.product_name(), "K100_AI");
  EXPECT_EQ(d.product_name_source(), "table:pci 0x1d94:0x6210");
  EXPECT_EQ(d.arch(), "gfx928");
  EXPECT_EQ(d.arch_source(), "kfd:gfx_target_version");
  EXPECT_EQ(d.pci_bus(), "0000:07:00.0");
  EXPECT_EQ(d.drm_render_minor(), 128);
  EXPECT_EQ(d.kfd_gpu_id(), 50000u);
  EXPECT_EQ(d.kfd_node(), 1);
  EXPECT_EQ(d.drm_card(), "card1");
  EXPECT_EQ(d.drm_match(), "pci_bus");
  EXPECT_EQ(d.unique_id(), "7100fa8866904061");
  EXPECT_EQ(d.total().bytes(), 65520ll * 1024 * 1024);
  EXPECT_EQ(d.total().source(), "kfd:nodes/1/mem_banks/0/properties");
  EXPECT_TRUE(d.host_used().valid());
  EXPECT_EQ(d.host_used().bytes(), 2 * 1024 * 1024);
  EXPECT_EQ(d.host_used().source(), "sysfs:card1/device/mem_info_vram_used");
  EXPECT_EQ(d.host_free().bytes(), d.total().bytes() - d.host_used().bytes());
  EXPECT_TRUE(absl::StrContains(d.host_free().source(), "mem_info_vram_used"));
  EXPECT_FALSE(d.device_free().valid());  // not this backend's view
  EXPECT_EQ(r->devices[7].pci_bus(), "0000:1c:00.0");
  EXPECT_EQ(r->devices[7].drm_card(), "card8");
  for (const auto& dev : r->devices) EXPECT_EQ(dev.findings_size(), 0) << dev.DebugString();
}

TEST(SysfsKfdDeviceProbeTest, Z100UsesVerifiedPciId) {
  SysfsKfdDeviceProbe probe(FixtureRoot("z100-4x"));
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok()) << devs.status();
  ASSERT_EQ(devs->size(), 4u);
  EXPECT_EQ((*devs)[0].pci_device_id(), 0x54b7u);
  EXPECT_EQ((*devs)[0].product_name(), "Z100");
  EXPECT_EQ((*devs)[0].arch(), "gfx906");
  for (const auto& d : *devs) EXPECT_EQ(d.findings_size(), 0) << d.DebugString();
}

TEST(SysfsKfdDeviceProbeTest, Bw1000ArchWithoutKnownPciId) {
  SysfsKfdDeviceProbe probe(FixtureRoot("bw1000-8x"));
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok());
  ASSERT_EQ(devs->size(), 8u);
  EXPECT_EQ((*devs)[0].arch(), "gfx936");
  // Not in the table by PCI id: the KFD node name is the fallback here, the
  // merge step adds the vendor+arch name.
  EXPECT_EQ((*devs)[0].product_name_source(), "kfd:name");
}

TEST(SysfsKfdDeviceProbeTest, GarbageArchIsRejectedAndRecorded) {
  SysfsKfdDeviceProbe probe(FixtureRoot("garbage-arch"));
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok());
  ASSERT_EQ(devs->size(), 2u);
  EXPECT_EQ((*devs)[0].arch(), "");
  EXPECT_TRUE(HasFinding((*devs)[0], kArchRejected, "18446744073709551615"));
  EXPECT_EQ((*devs)[1].arch(), "gfx928");
  EXPECT_FALSE(HasFinding((*devs)[1], kArchRejected));
}

TEST(SysfsKfdDeviceProbeTest, OldKernelWithoutGfxTargetVersion) {
  SysfsKfdDeviceProbe probe(FixtureRoot("vega10-old-kernel"));
  auto r = probe.Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 1u);
  const Device& d = r->devices[0];
  EXPECT_EQ(d.arch(), "");
  EXPECT_TRUE(HasFinding(d, kOldKernel));
  EXPECT_EQ(d.product_name(), "MI25");
  EXPECT_EQ(d.pci_bus(), "0000:19:00.0");
  EXPECT_EQ(d.kfd_gpu_id(), 13261u);
  EXPECT_EQ(d.total().bytes(), 17163091968ll);
  // No DRM card in this dump: host view from KFD's used_memory.
  EXPECT_EQ(d.host_used().bytes(), 14102528);
  EXPECT_EQ(d.host_used().source(), "kfd:nodes/1/mem_banks/0/used_memory");
  EXPECT_TRUE(HasFinding(d, kDrmNotMatched));
}

TEST(SysfsKfdDeviceProbeTest, RealMi300xDumpWithMissingFiles) {
  SysfsKfdDeviceProbe probe(FixtureRoot("mi300x-1x"));
  auto r = probe.Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 1u);
  const Device& d = r->devices[0];
  EXPECT_EQ(d.arch(), "gfx942");
  EXPECT_EQ(d.product_name(), "MI300X");
  EXPECT_EQ(d.vendor(), "amd");
  EXPECT_EQ(d.kfd_node(), 2);
  EXPECT_EQ(d.kfd_gpu_id(), 0u);
  EXPECT_TRUE(HasFinding(d, kFileMissing, "gpu_id"));
  EXPECT_FALSE(d.total().valid());  // local_mem_size 0, no banks, no DRM
  EXPECT_FALSE(d.host_used().valid());
  EXPECT_EQ(d.unique_id(), absl::StrFormat("%016x", 4376936076086227261ull));
}

TEST(SysfsKfdDeviceProbeTest, RealMi210DumpHexStepping) {
  SysfsKfdDeviceProbe probe(FixtureRoot("mi210-8x"));
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok());
  ASSERT_EQ(devs->size(), 8u);
  for (const auto& d : *devs) {
    EXPECT_EQ(d.arch(), "gfx90a");
    EXPECT_EQ(d.product_name(), "MI210");
  }
  EXPECT_EQ((*devs)[0].pci_bus(), "0000:63:00.0");  // location_id 25344
}

TEST(SysfsKfdDeviceProbeTest, DrmOnlyHostSaysKfdIsMissingAndNamesTheCard) {
  SysfsKfdDeviceProbe probe(FixtureRoot("vega10-drm-only"));
  auto r = probe.Probe();
  ASSERT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "card0 0000:09:00.0")) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "KFD")) << r.status();
}

TEST(SysfsKfdDeviceProbeTest, MissingRoot) {
  SysfsKfdDeviceProbe probe("/nonexistent-dcu-root");
  EXPECT_TRUE(absl::IsUnavailable(probe.Probe().status()));
}

TEST(SysfsKfdDeviceProbeTest, MissingFilesDegradeOneFigure) {
  SysfsKfdDeviceProbe probe(FixtureRoot("missing-files"));
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok());
  ASSERT_EQ(devs->size(), 2u);
  EXPECT_EQ((*devs)[0].host_used().source(), "sysfs:card1/device/mem_info_vram_used");
  // card2 lost mem_info_vram_used: KFD's used_memory stands in.
  EXPECT_EQ((*devs)[1].host_used().source(), "kfd:nodes/2/mem_banks/0/used_memory");
  EXPECT_EQ((*devs)[1].kfd_gpu_id(), 0u);
  EXPECT_TRUE(HasFinding((*devs)[1], kFileMissing, "gpu_id"));
}

TEST(SysfsKfdDeviceProbeTest, MalformedPropertiesLineIsAFindingNotAFailure) {
  TempDir tmp;
  std::string root = CopyFixture("k100ai-8x", tmp.path());
  std::string p = root + "/sys/class/kfd/kfd/topology/nodes/1/properties";
  std::ofstream(p, std::ios::app) << "bogus_key not-a-number\n";
  SysfsKfdDeviceProbe probe(root);
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok());
  EXPECT_EQ(devs->size(), 8u);
  EXPECT_TRUE(HasFinding((*devs)[0], kFileMalformed, "bogus_key"));
}

TEST(SysfsKfdDeviceProbeTest, MatchesByRenderMinorWhenPciDiffers) {
  // A card whose uevent has no PCI slot is matched by its render node.
  TempDir tmp;
  std::string root = CopyFixture("k100ai-8x", tmp.path());
  for (int n = 1; n <= 8; ++n) {
    std::string dev = absl::StrCat(root, "/sys/class/drm/card", n, "/device");
    std::filesystem::remove(dev + "/uevent");
    std::filesystem::create_directories(absl::StrCat(dev, "/drm/renderD", 128 + (8 - n)));  // reversed
    // A Hygon DCU is a co-processor / accelerator, not a display: class is
    // not consulted.
    dcu::testing::WriteFile(dev + "/class", "0x0b4000\n");
  }
  SysfsKfdDeviceProbe probe(root);
  auto devs = probe.Enumerate();
  ASSERT_TRUE(devs.ok());
  ASSERT_EQ(devs->size(), 8u);
  EXPECT_EQ((*devs)[0].drm_card(), "card8");  // renderD128 lives under card8 now
  EXPECT_EQ((*devs)[0].drm_match(), "render_minor");
  EXPECT_EQ((*devs)[0].host_used().source(), "sysfs:card8/device/mem_info_vram_used");
}

TEST(SysfsKfdDeviceProbeTest, UnreadableFileIsReportedNotFatal) {
  TempDir tmp;
  std::string root = CopyFixture("k100ai-8x", tmp.path());
  std::string used = root + "/sys/class/drm/card1/device/mem_info_vram_used";
  ASSERT_EQ(chmod(used.c_str(), 0), 0);
  std::string out = dcu::testing::RunAsNobody([&] {
    SysfsKfdDeviceProbe probe(root);
    auto devs = probe.Enumerate();
    if (!devs.ok()) return std::string("error: ") + std::string(devs.status().message());
    const Device& d = (*devs)[0];
    return absl::StrCat("n=", devs->size(), " unreadable=", HasFinding(d, kFileUnreadable, "mem_info_vram_used"),
                        " used_source=", d.host_used().source());
  });
  // The host view falls back to KFD's used_memory; the EACCES is a finding.
  EXPECT_EQ(out, "n=8 unreadable=1 used_source=kfd:nodes/1/mem_banks/0/used_memory");
}

TEST(SysfsKfdDeviceProbeTest, UnreadableTopologyIsPermissionDenied) {
  TempDir tmp;
  std::string root = CopyFixture("k100ai-8x", tmp.path());
  std::string nodes = root + "/sys/class/kfd/kfd/topology/nodes";
  ASSERT_EQ(chmod(nodes.c_str(), 0), 0);
  std::string out = dcu::testing::RunAsNobody([&] {
    SysfsKfdDeviceProbe probe(root);
    auto r = probe.Probe();
    return absl::StrCat(absl::StatusCodeToString(r.status().code()), ": ", r.status().message());
  });
  EXPECT_TRUE(absl::StartsWith(out, "PERMISSION_DENIED")) << out;
  EXPECT_TRUE(absl::StrContains(out, nodes)) << out;
}

}  // namespace
}  // namespace dcu::agent
