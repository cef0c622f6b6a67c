// CatalogKnowledge over a real SQLite catalog (the shipped one): what launch
// outcomes do to the plans (issue 15: evidence that cannot poison the matrix)
// and to the next launch (a learned fix).
#include "controller/adapters/catalog_knowledge.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "controller/adapters/classifier_diagnoser.h"
#include "controller/store/sqlite_catalog_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modelkit/catalog_loader.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kStack[] = "vllm-0.9.2-bare-dtk2504";
constexpr char kModel[] = "qwen3-32b";

class CatalogKnowledgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteCatalogStore::Open(":memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    auto catalog = modelkit::LoadCatalogDir(testing::CatalogDir());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    ASSERT_TRUE(store_->ImportCatalog(*catalog, absl::ToUnixMillis(clock_.Now())).ok());
    knowledge_ = std::make_unique<CatalogKnowledge>(store_.get(), &clock_);
  }
  // The plan for kStack on gfx928, or nullptr; *excluded says where it was.
  const dcufleet::v1::Plan* Find(bool* excluded) {
    plans_.clear();
    excluded_.clear();
    knowledge_->PlansForArch(kModel, "gfx928", &plans_, &excluded_);
    for (const auto& p : plans_) {
      if (p.stack_id() == kStack) {
        *excluded = false;
        return &p;
      }
    }
    for (const auto& p : excluded_) {
      if (p.stack_id() == kStack) {
        *excluded = true;
        return &p;
      }
    }
    return nullptr;
  }
  void Outcome(const std::string& node, bool ready, const std::string& cls,
               const std::string& scope, dcufleet::v1::LearnedFix fix = {},
               const std::string& carried = "") {
    LaunchOutcomeRecord r;
    r.stack_id = kStack;
    r.node = node;
    r.arch = "gfx928";
    r.model = kModel;
    r.tp = 4;
    r.ready = ready;
    r.failure_class = cls;
    r.scope = scope;
    r.instance_id = "qwen3-32b-1-abc";
    r.learned_fix = std::move(fix);
    r.carried_fix = carried;
    knowledge_->RecordOutcome(r);
    clock_.Advance(absl::Seconds(1));
  }

  common::FakeClock clock_{absl::Now()};  // after the shipped evidence
  std::unique_ptr<SqliteCatalogStore> store_;
  std::unique_ptr<CatalogKnowledge> knowledge_;
  std::vector<dcufleet::v1::Plan> plans_, excluded_;
};

// Rows another writer put in the store reach the plans at the next read, 10 s
// on, without the whole history being read again; this controller's own
// rows, which the store lists too, are not counted twice.
TEST_F(CatalogKnowledgeTest, RowsWrittenElsewhereArriveAtTheNextReadAndOwnRowsCountOnce) {
  bool excluded = true;
  ASSERT_NE(Find(&excluded), nullptr);  // the evidence is read in full here
  Outcome("node-a", true, "", "");
  Outcome("node-b", true, "", "");
  knowledge_->FlushOutcomes();  // written: the store lists them from now on
  const dcufleet::v1::Plan* p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->verdict(), dcufleet::v1::VERDICT_WORKS);
  const std::string before = p->verdict_reason();

  // Two controllers' worth of stack-arch failures on two nodes, written to
  // the store directly: with them the stack is broken fleet-wide.
  for (const char* node : {"node-c", "node-d"}) {
    dcufleet::v1::Evidence e;
    e.set_stack_id(kStack);
    e.set_arch("gfx928");
    e.set_model(kModel);
    e.set_tp(4);
    e.set_node(node);
    e.set_kind(dcufleet::v1::EVIDENCE_LAUNCH);
    e.set_outcome(dcufleet::v1::LAUNCH_FAILED);
    e.set_failure_class("triton_unsupported_gpu_target");
    e.set_scope(dcufleet::v1::SCOPE_STACK_ARCH);
    e.set_config_ok(true);
    e.set_at_ms(absl::ToUnixMillis(clock_.Now()));
    e.set_evidence_id(absl::StrCat("ev-elsewhere-", node));
    ASSERT_TRUE(store_->RecordEvidence(e).ok());
  }
  p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(excluded) << "read before 10 s passed: " << p->excluded_reason();

  clock_.Advance(absl::Seconds(11));
  p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(excluded) << p->verdict_reason();
  EXPECT_THAT(p->excluded_reason(), HasSubstr("triton_unsupported_gpu_target, 2 launches"));

  // A ready launch of this controller's puts it back to works; the reason
  // counts each ready row once (the two read back from the store, not twice).
  Outcome("node-a", true, "", "");
  knowledge_->FlushOutcomes();
  clock_.Advance(absl::Seconds(11));
  p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  ASSERT_FALSE(excluded) << p->excluded_reason();
  EXPECT_THAT(before, HasSubstr("works for qwen3-32b on gfx928"));
  int ready_before = 0, ready_after = 0;
  ASSERT_EQ(sscanf(before.c_str() + before.find(": ") + 2, "%d", &ready_before), 1) << before;
  const std::string after = p->verdict_reason();
  ASSERT_EQ(sscanf(after.c_str() + after.find(": ") + 2, "%d", &ready_after), 1) << after;
  EXPECT_EQ(ready_after, ready_before + 1) << before << " / " << after;
}

TEST_F(CatalogKnowledgeTest, PortInUseThreeTimesDoesNotExcludeAWorkingStack) {
  bool excluded = true;
  ASSERT_NE(Find(&excluded), nullptr);
  ASSERT_FALSE(excluded);
  for (int i = 0; i < 3; ++i) Outcome("node-a", false, "port_in_use", "node_state");
  const dcufleet::v1::Plan* p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(excluded) << p->excluded_reason();
  EXPECT_EQ(p->verdict(), dcufleet::v1::VERDICT_WORKS);
}

TEST_F(CatalogKnowledgeTest, OneNodesFailureDemotesASecondNodesExcludesThenItIsRequalified) {
  Outcome("node-a", false, "triton_kernel_compile_failure", "stack_arch");
  bool excluded = true;
  const dcufleet::v1::Plan* p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(excluded) << "one node's word excluded the stack fleet-wide";
  EXPECT_THAT(p->verdict_reason(), HasSubstr("on the word of node 'node-a' only"));
  EXPECT_THAT(p->verdict_reason(), HasSubstr("demoted"));
  EXPECT_EQ(p->rank(), static_cast<int>(plans_.size())) << "a demoted stack is tried last";

  Outcome("node-b", false, "triton_kernel_compile_failure", "stack_arch");
  p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(excluded);
  EXPECT_THAT(p->excluded_reason(), HasSubstr("triton_kernel_compile_failure"));

  // Old enough: tried once more, after the other plans.
  clock_.Advance(absl::Hours(6));
  p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(excluded);
  EXPECT_THAT(p->verdict_reason(), HasSubstr("re-qualifying"));
  // It works now: the verdict recovers.
  Outcome("node-b", true, "", "");
  p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(excluded);
  EXPECT_EQ(p->verdict(), dcufleet::v1::VERDICT_WORKS);
}

// A pass's outcomes change the verdicts at once and are written together
// when the reconciler flushes them (one transaction per pass, not one per
// launch); a controller started afterwards reads them back.
TEST_F(CatalogKnowledgeTest, OutcomesCountAtOnceAndAreWrittenTogetherOnFlush) {
  bool excluded = false;
  ASSERT_NE(Find(&excluded), nullptr);
  auto before = store_->ListEvidence(EvidenceFilter());
  ASSERT_TRUE(before.ok());
  Outcome("node-a", false, "triton_kernel_compile_failure", "stack_arch");
  Outcome("node-b", false, "triton_kernel_compile_failure", "stack_arch");
  ASSERT_NE(Find(&excluded), nullptr);
  EXPECT_TRUE(excluded) << "the verdict waited for the write";
  EXPECT_EQ(store_->ListEvidence(EvidenceFilter())->size(), before->size()) << "written before the flush";
  // Reloaded from the store meanwhile (every 10 s): the unwritten rows stay known.
  clock_.Advance(absl::Seconds(11));
  ASSERT_NE(Find(&excluded), nullptr);
  EXPECT_TRUE(excluded);
  knowledge_->FlushOutcomes();
  EXPECT_EQ(store_->ListEvidence(EvidenceFilter())->size(), before->size() + 2);
  knowledge_->FlushOutcomes();  // nothing twice
  EXPECT_EQ(store_->ListEvidence(EvidenceFilter())->size(), before->size() + 2);
  CatalogKnowledge restarted(store_.get(), &clock_);
  std::vector<dcufleet::v1::Plan> plans, gone;
  restarted.PlansForArch(kModel, "gfx928", &plans, &gone);
  bool found = false;
  for (const auto& p : gone) found |= p.stack_id() == kStack;
  EXPECT_TRUE(found) << "a restarted controller did not read the flushed evidence";
}

TEST_F(CatalogKnowledgeTest, ALearnedFixIsRenderedIntoTheNextLaunchOnAnyNode) {
  bool excluded = false;
  const dcufleet::v1::Plan* p = Find(&excluded);
  ASSERT_NE(p, nullptr);
  dcufleet::v1::Plan plan = *p;
  dcufleet::v1::Placement placement;
  placement.set_node("node-b");
  placement.set_arch("gfx928");
  placement.set_tp(4);
  placement.set_port(8000);
  dcufleet::v1::DeploymentSpec spec;
  spec.set_model(kModel);
  spec.set_max_model_len(8192);
  spec.set_max_num_seqs(16);
  auto before = knowledge_->RenderLaunch(spec, plan, placement, "/models/Qwen3-32B", 0);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_FALSE(before->has_learned_fix());

  dcufleet::v1::LearnedFix fix;
  fix.add_ld_library_path_prefix("/opt/dtk/.hyhal/rocm_smi/lib");
  fix.add_answered("shared_lib_undefined_symbol");
  Outcome("node-a", true, "", "", fix);
  auto after = knowledge_->RenderLaunch(spec, plan, placement, "/models/Qwen3-32B", 0);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_GT(after->ld_library_path_prefix_size(), 0);
  EXPECT_EQ(after->ld_library_path_prefix(0), "/opt/dtk/.hyhal/rocm_smi/lib");
  EXPECT_EQ(after->learned_fix().node(), "node-a");
  const std::string learned_from = after->learned_fix().evidence_id();
  EXPECT_FALSE(learned_from.empty());

  // A launch that carried it fails the same way: demoted, the next launch
  // goes without it (and can learn again).
  Outcome("node-b", false, "shared_lib_undefined_symbol", "remediable", {}, learned_from);
  auto demoted = knowledge_->RenderLaunch(spec, plan, placement, "/models/Qwen3-32B", 0);
  ASSERT_TRUE(demoted.ok());
  EXPECT_FALSE(demoted->has_learned_fix());
}

// Seed 000 as the controller reads it: the log is only the head-size
// refusal; the placement (gfx928) and the shipped stack's versions (vLLM
// 0.11.0 with triton 3.1.0) are facts, and with them the built-in rules say
// what bites next. It is kept on the attempt for people, marked, with what
// it rests on and no remediation to act on.
TEST_F(CatalogKnowledgeTest, TheStacksVersionsAreFactsAndSeed000sNextCauseIsKept) {
  dcufleet::v1::DeploymentSpec spec;
  spec.set_model(kModel);
  dcufleet::v1::Attempt a;
  a.set_stack_id("vllm-0.11.0-bare-dtk2604");
  a.mutable_placement()->set_arch("gfx928");
  a.mutable_placement()->set_tp(4);
  std::map<std::string, std::string> facts = knowledge_->DiagnosisFacts(spec, a, 64LL << 30);
  EXPECT_EQ(facts["stack.triton_version"], "3.1.0");
  EXPECT_EQ(facts["stack.engine_version"], "0.11.0");
  EXPECT_EQ(facts["stack.engine"], "vllm");
  EXPECT_EQ(facts["arch"], "gfx928");

  auto classifier = modelkit::BuiltInClassifier(modelkit::AllDiagnosisActions());
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  ClassifierDiagnoser diagnoser(std::move(*classifier));
  const std::vector<std::string> log = {
      "ValueError: Head size 80 is not supported by FlashAttention. Supported head sizes are: "
      "[32, 64, 96, 128, 160, 192, 224, 256]."};
  std::vector<dcufleet::v1::AttemptFinding> findings = diagnoser.Diagnose(log, facts);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].failure_class(), "unsupported_head_size");
  EXPECT_FALSE(findings[0].expected_next());
  EXPECT_EQ(findings[1].failure_class(), "triton_unsupported_gpu_target");
  EXPECT_TRUE(findings[1].expected_next());
  EXPECT_EQ(findings[1].remediation_kind(), dcufleet::v1::REMEDIATION_KIND_UNSPECIFIED);
  EXPECT_THAT(findings[1].explanation(), HasSubstr("expected once unsupported_head_size is fixed"));
  EXPECT_THAT(findings[1].conditions(), ElementsAre("arch gfx928 (given)", "triton 3.1.0 (given)"));

  // The stack that works there (triton 3.0.0): nothing expected next.
  a.set_stack_id(kStack);
  facts = knowledge_->DiagnosisFacts(spec, a, 64LL << 30);
  EXPECT_EQ(facts["stack.triton_version"], "3.0.0");
  findings = diagnoser.Diagnose(log, facts);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].failure_class(), "unsupported_head_size");
}

}  // namespace
}  // namespace dcu::controller
