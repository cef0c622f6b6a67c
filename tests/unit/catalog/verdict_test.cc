#include "modelkit/verdict.h"

#include "absl/strings/str_cat.h"
#include "modelkit/catalog_loader.h"
#include "modelkit/learned_fix.h"
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

// Issue 15: evidence is weighed by what it implicates.
TEST(VerdictTest, FailuresOfTheNodeOrTheMomentNeverMakeAStackBroken) {
  std::vector<Evidence> rows = {Row("ok", 1000, true)};
  // Three port_in_use failures in 2 s (an unrelated service on the port), a
  // kill, a crash without a message, a lost node.
  for (const char* cls : {"port_in_use", "port_in_use", "port_in_use", "unknown", "", "node_lost"}) {
    rows.push_back(Row(absl::StrCat("f", rows.size()), 2000 + rows.size(), false, cls));
  }
  EXPECT_EQ(ComputeStackArchVerdict("s", "gfx928", rows).state(), dcufleet::v1::VERDICT_WORKS);
  auto mv = ComputeModelVerdict("s", "gfx928", "m", rows);
  EXPECT_EQ(mv.state(), dcufleet::v1::VERDICT_WORKS) << mv.reason();
  EXPECT_EQ(DefaultScopeOfFailureClass("unknown"), dcufleet::v1::SCOPE_NODE_STATE);
}

TEST(VerdictTest, ABrokenVerdictOnOneNodesWordSaysSo) {
  Evidence a1 = Row("a1", 1000, false, "triton_unsupported_gpu_target");
  Evidence a2 = Row("a2", 2000, false, "triton_unsupported_gpu_target");
  a1.set_node("node-a");
  a2.set_node("node-a");
  std::vector<Evidence> rows = {a1, a2};
  auto v = ComputeStackArchVerdict("s", "gfx928", rows);
  EXPECT_EQ(v.state(), dcufleet::v1::VERDICT_BROKEN);
  EXPECT_EQ(v.only_node(), "node-a");
  EXPECT_THAT(v.reason(), HasSubstr("on the word of node 'node-a' only"));
  EXPECT_EQ(ComputeModelVerdict("s", "gfx928", "m", rows).only_node(), "node-a");
  // A second node agrees: the fleet's word.
  Evidence b = Row("b", 3000, false, "triton_unsupported_gpu_target");
  b.set_node("node-b");
  rows.push_back(b);
  EXPECT_EQ(ComputeStackArchVerdict("s", "gfx928", rows).only_node(), "");
  // So does a seed row (the catalog's own word), with one node.
  Evidence seed = Row("seed", 500, false, "triton_unsupported_gpu_target");
  seed.set_kind(dcufleet::v1::EVIDENCE_SEED);
  seed.set_node("node-a");
  EXPECT_EQ(ComputeStackArchVerdict("s", "gfx928", {seed, a1, a2}).only_node(), "");
}

Evidence ReadyWithFix(const std::string& id, int64_t at_ms, const std::string& path,
                      const std::string& carried = "") {
  Evidence e = Row(id, at_ms, true);
  e.set_node("node-a");
  e.set_instance_id("i-" + id);
  e.mutable_learned_fix()->add_ld_library_path_prefix(path);
  e.mutable_learned_fix()->add_answered("shared_lib_undefined_symbol");
  e.set_carried_fix(carried);
  return e;
}

Evidence FailedCarrying(const std::string& id, int64_t at_ms, const std::string& cls,
                        const std::string& carried) {
  Evidence e = Row(id, at_ms, false, cls);
  e.set_carried_fix(carried);
  return e;
}

TEST(LearnedFixTest, TheNewestReadyLaunchWithAFixTeachesIt) {
  EXPECT_FALSE(LearnedFixFor("s", "gfx928", {Row("plain", 1000, true)}).has_value());
  std::vector<Evidence> rows = {ReadyWithFix("r1", 1000, "/old"), ReadyWithFix("r2", 2000, "/new"),
                                Row("plain", 3000, true)};
  auto fix = LearnedFixFor("s", "gfx928", rows);
  ASSERT_TRUE(fix.has_value());
  EXPECT_EQ(fix->ld_library_path_prefix(0), "/new");
  EXPECT_EQ(fix->evidence_id(), "r2");
  EXPECT_EQ(fix->node(), "node-a");
  EXPECT_EQ(fix->instance_id(), "i-r2");
  EXPECT_EQ(fix->at_ms(), 2000);
  // Another arch, another stack: nothing.
  EXPECT_FALSE(LearnedFixFor("s", "gfx906", rows).has_value());
  EXPECT_FALSE(LearnedFixFor("t", "gfx928", rows).has_value());
}

TEST(LearnedFixTest, AFailureThatImplicatesTheStackDemotesTheFixItCarried) {
  std::vector<Evidence> rows = {ReadyWithFix("r1", 1000, "/p")};
  // The node's or the moment's failures do not.
  rows.push_back(FailedCarrying("f1", 2000, "port_in_use", "r1"));
  rows.push_back(FailedCarrying("f2", 2100, "unknown", "r1"));
  rows.push_back(FailedCarrying("f3", 2200, "config_or_tokenizer_error", "r1"));
  ASSERT_TRUE(LearnedFixFor("s", "gfx928", rows).has_value());
  // The symbol comes back with the fix in force: it no longer fixes it.
  rows.push_back(FailedCarrying("f4", 3000, "shared_lib_undefined_symbol", "r1"));
  EXPECT_FALSE(LearnedFixFor("s", "gfx928", rows).has_value());
  // An older fix does not come back with it.
  rows.insert(rows.begin(), ReadyWithFix("r0", 500, "/older"));
  EXPECT_FALSE(LearnedFixFor("s", "gfx928", rows).has_value());
  // A later launch learns again: in force.
  rows.push_back(ReadyWithFix("r5", 4000, "/relearned"));
  auto fix = LearnedFixFor("s", "gfx928", rows);
  ASSERT_TRUE(fix.has_value());
  EXPECT_EQ(fix->ld_library_path_prefix(0), "/relearned");
}

TEST(LearnedFixTest, ApplyPutsTheLibrariesFirstAndRecordsTheFix) {
  dcufleet::v1::InstanceSpec spec;
  spec.add_ld_library_path_prefix("/opt/dtk/lib");
  spec.add_ld_library_path_prefix("/opt/hyhal/lib");
  (*spec.mutable_env())["A"] = "recipe";
  dcufleet::v1::LearnedFix fix;
  fix.add_ld_library_path_prefix("/opt/dtk/.hyhal/rocm_smi/lib");
  fix.add_ld_library_path_prefix("/opt/dtk/lib");
  (*fix.mutable_env())["A"] = "learned";
  fix.set_evidence_id("ev-1");
  ApplyLearnedFix(fix, &spec);
  EXPECT_THAT(spec.ld_library_path_prefix(),
              ::testing::ElementsAre("/opt/dtk/.hyhal/rocm_smi/lib", "/opt/dtk/lib", "/opt/hyhal/lib"));
  EXPECT_EQ(spec.env().at("A"), "learned");
  EXPECT_EQ(spec.learned_fix().evidence_id(), "ev-1");
  auto merged = MergeLearnedFixes(fix, spec.learned_fix());
  EXPECT_EQ(merged.ld_library_path_prefix_size(), 2);
  EXPECT_THAT(DescribeLearnedFix(fix), HasSubstr("LD_LIBRARY_PATH first: /opt/dtk/.hyhal/rocm_smi/lib:/opt/dtk/lib"));
}

}  // namespace
}  // namespace dcu::modelkit
