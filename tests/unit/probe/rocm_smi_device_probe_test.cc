#include "agent/probe/rocm_smi_device_probe.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "agent/probe/findings.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using dcu::testing::TempDir;

constexpr char kDtkDir[] = "/opt/dtk/.hyhal/rocm_smi/lib";
constexpr char kHyhalDir[] = "/opt/hyhal/lib";

// A root with the good library (exports rsmi_init) in DTK's directory and
// the one without rsmi_init in /opt/hyhal/lib, as on the node of seed 003.
class RocmSmiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path() + "/root";
    Place(FAKE_RSMI_GOOD, kDtkDir);
    Place(FAKE_RSMI_NOINIT, kHyhalDir);
  }
  void Place(const std::string& lib, const std::string& dir) {
    std::filesystem::create_directories(root_ + dir);
    std::filesystem::copy_file(lib, root_ + dir + "/librocm_smi64.so.2",
                               std::filesystem::copy_options::overwrite_existing);
  }
  RocmSmiOptions Options(std::vector<std::string> dirs) {
    RocmSmiOptions o;
    o.root = root_;
    o.search_dirs = std::move(dirs);
    return o;
  }
  TempDir tmp_;
  std::string root_;
};

TEST_F(RocmSmiTest, FirstLibraryWithoutRsmiInitGivesFindingWithFix) {
  auto probe = RocmSmiDeviceProbe::Create(Options({kHyhalDir, "/opt/hyhal/lib64", kDtkDir, "/opt/dtk/lib"}));
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_EQ((*probe)->library(), "/opt/dtk/.hyhal/rocm_smi/lib/librocm_smi64.so.2");
  ASSERT_EQ((*probe)->candidates().size(), 2u);
  EXPECT_FALSE((*probe)->candidates()[0].has_rsmi_init);
  EXPECT_TRUE((*probe)->candidates()[0].loadable);
  EXPECT_TRUE((*probe)->candidates()[1].usable());
  EXPECT_EQ((*probe)->RecommendedLdLibraryPath(),
            (std::vector<std::string>{kDtkDir, kHyhalDir, "/opt/hyhal/lib64", "/opt/dtk/lib"}));

  auto r = (*probe)->Probe();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->findings.size(), 1u);
  const auto& f = r->findings[0];
  EXPECT_EQ(f.code(), kRsmiConflict);
  EXPECT_EQ(f.field(), "LD_LIBRARY_PATH");
  EXPECT_TRUE(absl::StrContains(f.message(), "'/opt/hyhal/lib/librocm_smi64.so.2'")) << f.message();
  EXPECT_TRUE(absl::StrContains(f.message(), "'/opt/dtk/.hyhal/rocm_smi/lib/librocm_smi64.so.2'")) << f.message();
  EXPECT_TRUE(absl::StrContains(
      f.message(), "LD_LIBRARY_PATH=/opt/dtk/.hyhal/rocm_smi/lib:/opt/hyhal/lib:/opt/hyhal/lib64:/opt/dtk/lib"))
      << f.message();

  // Figures from the library that has rsmi_init.
  ASSERT_EQ(r->devices.size(), 2u);
  const auto& d0 = r->devices[0];
  EXPECT_EQ(d0.pci_bus(), "0000:07:00.0");
  EXPECT_EQ(d0.product_name(), "K100_AI");
  EXPECT_EQ(d0.arch(), "gfx928");
  EXPECT_EQ(d0.arch_source(), "rocm_smi:rsmi_dev_target_graphics_version_get");
  EXPECT_EQ(d0.total().bytes(), 65520ll * 1024 * 1024);
  EXPECT_EQ(d0.total().source(), "rocm_smi:rsmi_dev_memory_total_get");
  EXPECT_EQ(d0.host_used().bytes(), 3ll << 30);
  EXPECT_EQ(d0.host_used().source(), "rocm_smi:rsmi_dev_memory_usage_get");
  EXPECT_EQ(d0.unique_id(), "7100fa8866904061");
  // Device 1 returns UINT64_MAX: "gfx18446744073709551615" is rejected.
  const auto& d1 = r->devices[1];
  EXPECT_EQ(d1.arch(), "");
  ASSERT_EQ(d1.findings_size(), 1);
  EXPECT_EQ(d1.findings(0).code(), kArchRejected);
  EXPECT_TRUE(absl::StrContains(d1.findings(0).message(), "gfx18446744073709551615"));
  EXPECT_EQ(d1.host_used().bytes(), 1ll << 30);
}

TEST_F(RocmSmiTest, GoodLibraryFirstNeedsNoFix) {
  auto probe = RocmSmiDeviceProbe::Create(Options({kDtkDir, kHyhalDir}));
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_EQ((*probe)->library(), "/opt/dtk/.hyhal/rocm_smi/lib/librocm_smi64.so.2");
  EXPECT_TRUE((*probe)->RecommendedLdLibraryPath().empty());
  auto r = (*probe)->Probe();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->findings.empty());
  EXPECT_EQ(r->devices.size(), 2u);
}

TEST_F(RocmSmiTest, OnlyLibraryWithoutRsmiInitIsUnavailable) {
  auto probe = RocmSmiDeviceProbe::Create(Options({kHyhalDir}));
  ASSERT_TRUE(absl::IsUnavailable(probe.status())) << probe.status();
  EXPECT_TRUE(absl::StrContains(probe.status().message(), "does not export rsmi_init")) << probe.status();
  EXPECT_TRUE(absl::StrContains(probe.status().message(), "/opt/hyhal/lib/librocm_smi64.so.2"));
}

TEST_F(RocmSmiTest, NoLibraryIsUnavailable) {
  auto probe = RocmSmiDeviceProbe::Create(Options({"/opt/rocm/lib"}));
  EXPECT_TRUE(absl::IsUnavailable(probe.status())) << probe.status();
}

TEST_F(RocmSmiTest, UnloadableFileIsReportedNotLoaded) {
  dcu::testing::WriteFile(root_ + "/opt/rocm/lib/librocm_smi64.so.2", "not an ELF file\n");
  auto cands = RocmSmiDeviceProbe::Inspect(Options({"/opt/rocm/lib", kDtkDir}));
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_FALSE(cands[0].loadable);
  EXPECT_FALSE(cands[0].load_error.empty());
  auto probe = RocmSmiDeviceProbe::Create(Options({"/opt/rocm/lib", kDtkDir}));
  ASSERT_TRUE(probe.ok()) << probe.status();
  auto r = (*probe)->Probe();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].code(), kRsmiConflict);  // it does not export rsmi_init either
}

TEST(RocmSmiDefaultsTest, DefaultOrderHasTheDtkAndHyhalDirs) {
  auto dirs = DefaultRocmSmiSearchDirs();
  auto pos = [&](const std::string& d) { return std::find(dirs.begin(), dirs.end(), d) - dirs.begin(); };
  EXPECT_LT(pos("/opt/hyhal/lib"), pos("/opt/dtk/.hyhal/rocm_smi/lib"));
  EXPECT_LT(pos("/opt/dtk/.hyhal/rocm_smi/lib"), static_cast<long>(dirs.size()));
  EXPECT_LT(pos("/opt/rocm/lib"), static_cast<long>(dirs.size()));
}

}  // namespace
}  // namespace dcu::agent
