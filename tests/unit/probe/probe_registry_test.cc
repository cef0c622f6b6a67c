#include "agent/probe/probe_registry.h"

#include "absl/strings/match.h"
#include "agent/probe/fake_device_probe.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

TEST(ProbeRegistryTest, BuiltinsByName) {
  auto r = DeviceProbeRegistry::WithBuiltins();
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"cuda", "hip", "nvml", "rocm_smi", "sysfs_kfd"}));
  ProbeContext ctx;
  ctx.root = dcu::testing::FixtureRoot("z100-4x");
  auto p = r.Create("sysfs_kfd", ctx);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->Name(), "sysfs_kfd");
  EXPECT_EQ((*p)->Enumerate()->size(), 4u);
  // No librocm_smi64 under the fixture root: the factory says UNAVAILABLE.
  EXPECT_TRUE(absl::IsUnavailable(r.Create("rocm_smi", ctx).status()));
  auto unknown = r.Create("tpu", ctx);
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status()));
  EXPECT_TRUE(absl::StrContains(unknown.status().message(), "sysfs_kfd"));
}

TEST(ProbeRegistryTest, RegisterFake) {
  auto r = DeviceProbeRegistry::WithBuiltins();
  r.Register("fake", [](const ProbeContext&) -> absl::StatusOr<std::unique_ptr<DeviceProbe>> {
    return std::make_unique<FakeDeviceProbe>("fake");
  });
  EXPECT_TRUE(r.Has("fake"));
  EXPECT_EQ((*r.Create("fake", ProbeContext()))->Name(), "fake");
}

TEST(ParseProbeListTest, OrderKeptAndBadListsRefused) {
  EXPECT_EQ(*ParseProbeList("sysfs_kfd, rocm_smi,hip"), (std::vector<std::string>{"sysfs_kfd", "rocm_smi", "hip"}));
  EXPECT_EQ(*ParseProbeList(kDefaultProbeList), (std::vector<std::string>{"sysfs_kfd", "rocm_smi", "hip"}));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseProbeList("").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseProbeList(" , ").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseProbeList("hip,hip").status()));
}

}  // namespace
}  // namespace dcu::agent
