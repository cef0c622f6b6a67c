#include "modelkit/verdict.h"

#include "modelkit/catalog_loader.h"
#include "modelkit/stack_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::Evidence;
using ::testing::HasSubstr;

class SeedVerdictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = LoadCatalogDir(testing::CatalogDir());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *catalog;
    evidence_.assign(catalog_.evidence().begin(), catalog_.evidence().end());
  }
  dcufleet::v1::CatalogFile catalog_;
  std::vector<Evidence> evidence_;
};

TEST_F(SeedVerdictTest, Vllm0110IsBrokenOnGfx928AndSaysWhy) {
  auto v = ComputeStackArchVerdict("vllm-0.11.0-bare-dtk2604", "gfx928", evidence_);
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_BROKEN);
  EXPECT_EQ(v.failure_class(), "triton_unsupported_gpu_target");
  EXPECT_THAT(v.reason(), HasSubstr("broken on gfx928: triton_unsupported_gpu_target, 3 launches, "
                                    "last 2026-07-12"));
  // The 0.6B that ran earlier in the same env does not hide the later failure.
  EXPECT_THAT(v.reason(), HasSubstr("1 earlier ready launch superseded (qwen3-0.6b)"));
  EXPECT_EQ(v.failed_count(), 3);
  // The free-memory and head-size-80 failures were the node's and the config's.
  EXPECT_EQ(v.ignored_count(), 2);
  EXPECT_EQ(v.evidence_ids_size(), 3);
}

TEST_F(SeedVerdictTest, Vllm092StacksWorkOnGfx928) {
  auto bare = ComputeStackArchVerdict("vllm-0.9.2-bare-dtk2504", "gfx928", evidence_);
  EXPECT_EQ(bare.state(), dcufleet::v1::VERDICT_WORKS);
  EXPECT_THAT(bare.reason(), HasSubstr("works on gfx928: 1 launch and 1 probe ready (probe, qwen3-32b TP=2), last 2026-07-23"));
  auto image = ComputeStackArchVerdict("vllm-0.9.2-image-dtk2504", "gfx928", evidence_);
  EXPECT_EQ(image.state(), dcufleet::v1::VERDICT_WORKS);
  auto model = ComputeModelVerdict("vllm-0.9.2-image-dtk2504", "gfx928", "qwen3-32b", evidence_);
  EXPECT_EQ(model.state(), dcufleet::v1::VERDICT_WORKS);
  EXPECT_THAT(model.reason(), HasSubstr("qwen3-32b TP=4"));
}

TEST_F(SeedVerdictTest, ModelVerdictsOnTheBrokenStack) {
  // The 0.6B's own evidence says it ran.
  auto small = ComputeModelVerdict("vllm-0.11.0-bare-dtk2604", "gfx928", "qwen3-0.6b", evidence_);
  EXPECT_EQ(small.state(), dcufleet::v1::VERDICT_WORKS);
  auto big = ComputeModelVerdict("vllm-0.11.0-bare-dtk2604", "gfx928", "qwen3-32b", evidence_);
  EXPECT_EQ(big.state(), dcufleet::v1::VERDICT_BROKEN);
  EXPECT_FALSE(big.inherited());
  // A model never tried inherits the stack's broken verdict on the arch.
  auto other = ComputeModelVerdict("vllm-0.11.0-bare-dtk2604", "gfx928", "qwen3-8b", evidence_);
  EXPECT_EQ(other.state(), dcufleet::v1::VERDICT_BROKEN);
  EXPECT_TRUE(other.inherited());
  EXPECT_THAT(other.reason(), HasSubstr("broken for qwen3-8b on gfx928 (the stack is broken on gfx928"));
  // On a working stack an untried model is untested, and says the stack works.
  auto untried = ComputeModelVerdict("vllm-0.9.2-bare-dtk2504", "gfx928", "qwen3-8b", evidence_);
  EXPECT_EQ(untried.state(), dcufleet::v1::VERDICT_UNTESTED);
  EXPECT_THAT(untried.reason(), HasSubstr("the stack works on gfx928"));
}

TEST_F(SeedVerdictTest, Vllm018WorksOnGfx906AfterItsRecipeAndIsUntestedOnGfx928) {
  auto v = ComputeStackArchVerdict("vllm-0.18-image-dtk2604", "gfx906", evidence_);
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_WORKS);
  EXPECT_THAT(v.reason(), HasSubstr("3 earlier failures superseded"));
  EXPECT_THAT(v.reason(), HasSubstr("triton_kernel_compile_failure"));
  auto gfx928 = ComputeStackArchVerdict("vllm-0.18-image-dtk2604", "gfx928", evidence_);
  EXPECT_EQ(gfx928.state(), dcufleet::v1::VERDICT_UNTESTED);
  EXPECT_EQ(gfx928.reason(), "untested on gfx928: no evidence");
}

TEST_F(SeedVerdictTest, ListStacksForAnArch) {
  std::vector<dcufleet::v1::Stack> stacks(catalog_.stack().begin(), catalog_.stack().end());
  dcufleet::v1::ListStacksRequest req;
  req.set_arch("gfx906");
  auto resp = BuildListStacksResponse(req, stacks, evidence_, {});
  ASSERT_EQ(resp.stacks_size(), 1);
  EXPECT_EQ(resp.stacks(0).stack().id(), "vllm-0.18-image-dtk2604");
  ASSERT_EQ(resp.stacks(0).arch_verdicts_size(), 1);
  EXPECT_EQ(resp.stacks(0).arch_verdicts(0).arch(), "gfx906");
  req.set_arch("gfx928");
  EXPECT_EQ(BuildListStacksResponse(req, stacks, evidence_, {}).stacks_size(), 5);
}

Evidence Row(const std::string& id, int64_t at_ms, bool ready, const std::string& cls = "",
              const std::string& model = "m") {
  Evidence e;
  e.set_evidence_id(id);
  e.set_stack_id("s");
  e.set_arch("gfx928");
  e.set_model(model);
  e.set_tp(1);
  e.set_at_ms(at_ms);
  e.set_config_ok(true);
  e.set_outcome(ready ? dcufleet::v1::LAUNCH_READY : dcufleet::v1::LAUNCH_FAILED);
  e.set_failure_class(cls);
  e.set_kind(dcufleet::v1::EVIDENCE_LAUNCH);
  return e;
}

TEST(VerdictTest, NoEvidenceIsUntested) {
  auto v = ComputeStackArchVerdict("s", "gfx906", {});
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_UNTESTED);
  EXPECT_EQ(v.reason(), "untested on gfx906: no evidence");
}

TEST(VerdictTest, LatestDecisiveRowWins) {
  std::vector<Evidence> rows = {Row("a", 1000, false, "triton_unsupported_gpu_target"),
                                Row("b", 2000, true)};
  EXPECT_EQ(ComputeStackArchVerdict("s", "gfx928", rows).state(), dcufleet::v1::VERDICT_WORKS);
  rows.push_back(Row("c", 3000, false, "hip_invalid_device_function"));
  auto v = ComputeStackArchVerdict("s", "gfx928", rows);
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_BROKEN);
  EXPECT_EQ(v.failure_class(), "hip_invalid_device_function");
  EXPECT_THAT(v.reason(), HasSubstr("hip_invalid_device_function, 1 launch, last 1970-01-01"));
}

TEST(VerdictTest, NodeConfigAndRemediableFailuresDoNotDecide) {
  Evidence config = Row("cfg", 1000, false, "unsupported_head_size");
  config.set_config_ok(false);
  std::vector<Evidence> rows = {Row("mem", 500, false, "startup_free_memory_below_utilization"),
                                config, Row("rsmi", 1500, false, "shared_lib_undefined_symbol")};
  auto v = ComputeStackArchVerdict("s", "gfx928", rows);
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_UNTESTED);
  EXPECT_EQ(v.ignored_count(), 3);
  EXPECT_THAT(v.reason(), HasSubstr("3 launches that do not decide"));
  EXPECT_EQ(ScopeOf(config), dcufleet::v1::SCOPE_MODEL_CONFIG);
  // The same head size error with a clean config counts against the model.
  Evidence clean = Row("clean", 2000, false, "unsupported_head_size");
  EXPECT_EQ(ScopeOf(clean), dcufleet::v1::SCOPE_STACK_ARCH_MODEL);
  rows.push_back(clean);
  EXPECT_EQ(ComputeStackArchVerdict("s", "gfx928", rows).state(), dcufleet::v1::VERDICT_UNTESTED);
  EXPECT_EQ(ComputeModelVerdict("s", "gfx928", "m", rows).state(), dcufleet::v1::VERDICT_BROKEN);
}

TEST(VerdictTest, ExplicitScopeOverridesTheClass) {
  Evidence e = Row("x", 10, false, "unknown");
  e.set_scope(dcufleet::v1::SCOPE_STACK_ARCH);
  auto v = ComputeStackArchVerdict("s", "gfx928", {e});
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_BROKEN);
}

TEST(VerdictTest, OtherStacksAndArchesAreIgnored) {
  Evidence other_arch = Row("a", 10, false, "triton_unsupported_gpu_target");
  other_arch.set_arch("gfx906");
  Evidence other_stack = Row("b", 20, false, "triton_unsupported_gpu_target");
  other_stack.set_stack_id("t");
  auto v = ComputeStackArchVerdict("s", "gfx928", {other_arch, other_stack, Row("c", 5, true)});
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_WORKS);
}

TEST(RecipeTest, Gfx906RecipeMergesOverTheBase) {
  auto catalog = LoadCatalogDir(testing::CatalogDir());
  ASSERT_TRUE(catalog.ok());
  for (const auto& s : catalog->stack()) {
    if (s.id() != "vllm-0.18-image-dtk2604") continue;
    EffectiveRecipe r = RecipeFor(s, "gfx906");
    EXPECT_EQ(r.env.ld_library_path_prefix(0), "/opt/dtk/.hyhal/rocm_smi/lib");
    EXPECT_EQ(r.required_patches.size(), 2u);
    EXPECT_EQ(r.argv_template.back(), "--skip-mm-profiling");
    EffectiveRecipe base = RecipeFor(s, "gfx928");
    EXPECT_TRUE(base.required_patches.empty());
    EXPECT_EQ(base.argv_template.size(), static_cast<size_t>(s.argv_template_size()));
    return;
  }
  FAIL() << "stack not found";
}

}  // namespace
}  // namespace dcu::modelkit
