#include "common/arch.h"

#include "gtest/gtest.h"

namespace dcu::common {
namespace {

TEST(DecodeGfxTargetVersionTest, DecodesWithHexStepping) {
  EXPECT_EQ(*DecodeGfxTargetVersion(90006), "gfx906");   // Z100
  EXPECT_EQ(*DecodeGfxTargetVersion(90208), "gfx928");   // K100_AI
  EXPECT_EQ(*DecodeGfxTargetVersion(90306), "gfx936");   // BW1000
  EXPECT_EQ(*DecodeGfxTargetVersion(90010), "gfx90a");   // MI210: stepping 10 is 'a'
  EXPECT_EQ(*DecodeGfxTargetVersion(90402), "gfx942");   // MI300X
  EXPECT_EQ(*DecodeGfxTargetVersion(110001), "gfx1101"); // RX 7800 XT
  EXPECT_EQ(*DecodeGfxTargetVersion(90012), "gfx90c");
}

TEST(DecodeGfxTargetVersionTest, RejectsZeroAndGarbage) {
  EXPECT_TRUE(absl::IsNotFound(DecodeGfxTargetVersion(0).status()));
  auto garbage = DecodeGfxTargetVersion(18446744073709551615ull);
  EXPECT_TRUE(absl::IsInvalidArgument(garbage.status()));
  EXPECT_NE(garbage.status().message().find("18446744073709551615"), std::string::npos);
  EXPECT_FALSE(DecodeGfxTargetVersion(90016).ok());  // stepping 16 has no hex digit
  EXPECT_FALSE(DecodeGfxTargetVersion(91006).ok());  // minor 10
  EXPECT_FALSE(DecodeGfxTargetVersion(50000).ok());  // major 5
}

TEST(ValidateArchTest, AcceptsRealNames) {
  for (const char* a : {"gfx906", "gfx928", "gfx936", "gfx90a", "gfx942", "gfx1100", "gfx1201", "sm_90", "sm_80",
                        "sm_90a", "sm_100"}) {
    EXPECT_TRUE(ValidateArch(a).ok()) << a;
  }
}

TEST(ValidateArchTest, RejectsGarbageSeenInTheField) {
  // DTK amdsmi (seed 003) and rocm-smi 6.2.4 on gfx1101 (gpustack data).
  for (const char* a : {"gfx18446744073709551615", "gfx11001", "gfx", "gfx0906", "gfx9", "gfx90g", "GFX906",
                        "gfx906:sramecc+", "sm_9", "sm_9x0", "cuda", "", "gfx0000", "gfx1300"}) {
    auto s = ValidateArch(a);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << a;
    EXPECT_NE(s.message().find("rejected"), std::string::npos) << a;
  }
}

TEST(NormalizeArchTest, StripsFeaturesAndCase) {
  EXPECT_EQ(*NormalizeArch("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(*NormalizeArch(" GFX928\n"), "gfx928");
  EXPECT_FALSE(NormalizeArch("gfx18446744073709551615").ok());
}

}  // namespace
}  // namespace dcu::common
