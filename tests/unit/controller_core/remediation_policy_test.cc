#include "controller/core/remediation_policy.h"

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "tests/testing/fake_knowledge.h"

namespace dcu::controller {
namespace {

using dcufleet::v1::AttemptFinding;
using dcufleet::v1::DiagnosisAction;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Next = RemediationDecision::Next;

constexpr int64_t kGiB = 1LL << 30;

AttemptFinding Finding(const std::string& cls, DiagnosisAction action,
                       std::map<std::string, std::string> params = {},
                       dcufleet::v1::RemediationKind kind = dcufleet::v1::REMEDIATION_KIND_AUTO) {
  AttemptFinding f;
  f.set_failure_class(cls);
  f.set_confidence(0.9);
  f.set_remediation_kind(kind);
  f.set_remediation_action(action);
  for (auto& [k, v] : params) (*f.mutable_params())[k] = v;
  return f;
}

class RemediationPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override { Reset(); }
  // A deployment at TP 2 on devices 2 and 3 of a four-device node.
  void Reset() {
    d_ = {};
    a_ = {};
    node_ = {};
    d_.mutable_spec()->set_name("qwen3-32b");
    d_.mutable_spec()->set_model("qwen3-32b");
    d_.mutable_spec()->set_tp(2);
    d_.mutable_spec()->set_max_model_len(8192);
    d_.mutable_spec()->set_max_num_seqs(16);
    a_.set_number(1);
    a_.set_stack_id("vllm-0.9.2-bare");
    a_.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
    a_.mutable_placement()->set_node("node-a");
    a_.mutable_placement()->set_arch("gfx928");
    a_.mutable_placement()->set_tp(2);
    a_.mutable_placement()->set_port(8001);
    a_.mutable_placement()->add_device_indices(2);
    a_.mutable_placement()->add_device_indices(3);
    node_.set_name("node-a");
    for (int i = 0; i < 4; ++i) {
      auto* dev = node_.mutable_inventory()->add_devices();
      dev->set_index(i);
      dev->mutable_total()->set_bytes(64 * kGiB);
    }
    ctx_.node = &node_;
    ctx_.device_total = 64 * kGiB;
  }
  RemediationDecision Decide(const AttemptFinding& f) {
    findings_ = {f};
    return policy_.Decide(d_, a_, findings_, ctx_);
  }

  testing::FakeModelCatalog catalog_;
  testing::FakeModelPreparer preparer_;
  testing::FakeLaunchRenderer renderer_;
  RemediationPolicy policy_{&catalog_, &preparer_, &renderer_};
  dcufleet::v1::Deployment d_;
  dcufleet::v1::Attempt a_;
  dcufleet::v1::NodeView node_;
  FailureContext ctx_;
  std::vector<AttemptFinding> findings_;
};

TEST_F(RemediationPolicyTest, SetEnvAddsTheVariables) {
  auto r = Decide(Finding("missing_custom_op", dcufleet::v1::DIAGNOSIS_ACTION_SET_ENV,
                          {{"VLLM_ROCM_USE_SKINNY_GEMM", "0"}}));
  EXPECT_EQ(r.next, Next::kRetryNow);
  EXPECT_EQ(d_.status().extra_env().at("VLLM_ROCM_USE_SKINNY_GEMM"), "0");
  EXPECT_THAT(d_.status().applied_remediations(),
              ElementsAre("missing_custom_op:set_env:VLLM_ROCM_USE_SKINNY_GEMM=0"));
  // Spent: the same finding backs off.
  EXPECT_EQ(Decide(findings_[0]).next, Next::kBackoff);
}

// Seed 000: a head-size refusal whose audit fix is spent, then the triton
// expected behind it. The expected one has not happened: it is not acted on
// (a failover that marks the stack broken), even carrying a remediation.
TEST_F(RemediationPolicyTest, ACauseExpectedNextIsNeverActedOn) {
  AttemptFinding head = Finding("unsupported_head_size", dcufleet::v1::DIAGNOSIS_ACTION_SET_ENV,
                                {{"VLLM_USE_TRITON_FLASH_ATTN", "1"}});
  AttemptFinding next = Finding("triton_unsupported_gpu_target",
                                dcufleet::v1::DIAGNOSIS_ACTION_FAILOVER,
                                {{"mark_broken", "stack_arch"}},
                                dcufleet::v1::REMEDIATION_KIND_FAILOVER);
  next.set_expected_next(true);
  findings_ = {head, next};
  EXPECT_EQ(policy_.Decide(d_, a_, findings_, ctx_).next, Next::kRetryNow);
  // The head-size fix is spent now: back off, no failover, nothing broken.
  RemediationDecision spent = policy_.Decide(d_, a_, findings_, ctx_);
  EXPECT_EQ(spent.next, Next::kBackoff);
  // The same finding not marked expected would have been taken.
  findings_[1].set_expected_next(false);
  EXPECT_EQ(policy_.Decide(d_, a_, findings_, ctx_).next, Next::kFailover);
}

TEST_F(RemediationPolicyTest, PrependLdLibraryPathPutsThePathsFirst) {
  d_.mutable_status()->add_ld_library_path_prefix("/opt/rocm/lib");
  d_.mutable_status()->add_ld_library_path_prefix("/usr/lib");
  auto r = Decide(Finding("shared_lib_undefined_symbol",
                          dcufleet::v1::DIAGNOSIS_ACTION_PREPEND_LD_LIBRARY_PATH,
                          {{"paths", "/opt/dtk/lib:/opt/rocm/lib"}}));
  EXPECT_EQ(r.next, Next::kRetryNow);
  EXPECT_THAT(d_.status().ld_library_path_prefix(),
              ElementsAre("/opt/dtk/lib", "/opt/rocm/lib", "/usr/lib"));
}

TEST_F(RemediationPolicyTest, AddArgSizesTheKvCacheFromThePlacedDevices) {
  auto r = Decide(Finding("no_cache_blocks", dcufleet::v1::DIAGNOSIS_ACTION_ADD_ARG,
                          {{"flag", "--kv-cache-memory-bytes"},
                           {"value", "${memory_plan.kv_cache_bytes}"}}));
  EXPECT_EQ(r.next, Next::kRetryNow);
  EXPECT_THAT(d_.status().extra_args(),
              ElementsAre("--kv-cache-memory-bytes", std::to_string(1LL << 30)));
  d_.mutable_status()->clear_extra_args();
  Decide(Finding("no_cache_blocks", dcufleet::v1::DIAGNOSIS_ACTION_ADD_ARG,
                 {{"flag", "--mem-fraction-static"}, {"value", "0.83"}}));
  EXPECT_THAT(d_.status().extra_args(), ElementsAre("--mem-fraction-static", "0.83"));
}

// Each port found held is avoided in turn (the next attempt takes the next
// free one), up to kPortsAvoidedAtMost; then the failure backs off like any
// other. Once only, three collisions failed the deployment over away from a
// working stack.
TEST_F(RemediationPolicyTest, EveryHeldPortIsAvoidedInTurnUpToALimit) {
  const auto port_in_use = Finding("port_in_use", dcufleet::v1::DIAGNOSIS_ACTION_CHANGE_PORT);
  std::vector<int> expected;
  for (int i = 0; i < RemediationPolicy::kPortsAvoidedAtMost; ++i) {
    a_.mutable_placement()->set_port(8001 + i);
    expected.push_back(8001 + i);
    EXPECT_EQ(Decide(port_in_use).next, Next::kRetryNow) << "collision " << i + 1;
    EXPECT_THAT(d_.status().avoided_ports(), ::testing::ElementsAreArray(expected));
  }
  a_.mutable_placement()->set_port(8001 + RemediationPolicy::kPortsAvoidedAtMost);
  EXPECT_NE(Decide(port_in_use).next, Next::kRetryNow);
  EXPECT_EQ(d_.status().avoided_ports_size(), RemediationPolicy::kPortsAvoidedAtMost);
}

TEST_F(RemediationPolicyTest, DeviceNodePortAndSpecHandlers) {
  EXPECT_EQ(Decide(Finding("startup_free_memory_below_utilization",
                           dcufleet::v1::DIAGNOSIS_ACTION_REAP_OR_MOVE_DEVICES))
                .next,
            Next::kRetryNow);
  EXPECT_THAT(d_.status().avoided_devices(), ElementsAre("node-a/2", "node-a/3"));
  Decide(Finding("port_in_use", dcufleet::v1::DIAGNOSIS_ACTION_CHANGE_PORT));
  EXPECT_THAT(d_.status().avoided_ports(), ElementsAre(8001));
  Decide(Finding("tp_not_divisible_heads", dcufleet::v1::DIAGNOSIS_ACTION_CHANGE_TP));
  EXPECT_EQ(d_.spec().tp(), 0);
  d_.mutable_status()->clear_avoided_devices();
  Decide(Finding("model_path_not_found", dcufleet::v1::DIAGNOSIS_ACTION_MOVE_TO_NODE_WITH_MODEL));
  EXPECT_THAT(d_.status().avoided_devices(),
              ElementsAre("node-a/0", "node-a/1", "node-a/2", "node-a/3"));
  Decide(Finding("max_model_len_exceeds_kv_capacity",
                 dcufleet::v1::DIAGNOSIS_ACTION_REDUCE_MAX_MODEL_LEN, {{"max_model_len", "5000"}}));
  EXPECT_EQ(d_.spec().max_model_len(), 5000);
  // Not a reduction: halve.
  Decide(Finding("max_model_len_exceeds_kv_capacity",
                 dcufleet::v1::DIAGNOSIS_ACTION_REDUCE_MAX_MODEL_LEN, {{"max_model_len", "9000"}}));
  EXPECT_EQ(d_.spec().max_model_len(), 2500);
}

TEST_F(RemediationPolicyTest, ReplanMemoryMovesToTheNextTpTheHeadsAllow) {
  auto r = Decide(Finding("cuda_oom_model_load", dcufleet::v1::DIAGNOSIS_ACTION_REPLAN_MEMORY,
                          {{"reason", "weights"}}));
  EXPECT_EQ(r.next, Next::kRetryNow);
  EXPECT_EQ(d_.spec().tp(), 4);
  EXPECT_THAT(r.applied, HasSubstr("TP 2 → 4"));
  // At the largest TP there is nothing to replan: back off.
  a_.mutable_placement()->set_tp(8);
  d_.mutable_status()->clear_applied_remediations();
  r = Decide(Finding("cuda_oom_model_load", dcufleet::v1::DIAGNOSIS_ACTION_REPLAN_MEMORY,
                     {{"reason", "weights"}}));
  EXPECT_EQ(r.next, Next::kBackoff);
  EXPECT_THAT(r.why, HasSubstr("no TP above 8"));
}

TEST_F(RemediationPolicyTest, RetryRetriesNowUpToMaxAttemptsWithTheEnvHint) {
  AttemptFinding f = Finding("nccl_rccl_init_failure", dcufleet::v1::DIAGNOSIS_ACTION_RETRY,
                             {{"max_attempts", "2"}, {"env_hint", "NCCL_DEBUG=INFO"}});
  EXPECT_EQ(Decide(f).next, Next::kRetryNow);
  EXPECT_EQ(d_.status().extra_env().at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(Decide(f).next, Next::kRetryNow);
  EXPECT_EQ(Decide(f).next, Next::kBackoff);
}

TEST(RemediationKeyTest, EqualFindingsGiveOneKeyWhateverTheMapOrder) {
  // Protobuf map iteration order differs between copies of a map; the key
  // counts applications, so a copy (a finding read back from the store) must
  // give the same one. Enough entries that two orders are very likely.
  AttemptFinding f = Finding("nccl_rccl_init_failure", dcufleet::v1::DIAGNOSIS_ACTION_RETRY);
  for (int i = 0; i < 32; ++i) (*f.mutable_params())["p" + std::to_string(i)] = "v";
  const std::string key = RemediationPolicy::RemediationKey(f);
  for (int round = 0; round < 8; ++round) {
    AttemptFinding copy;
    ASSERT_TRUE(copy.ParseFromString(f.SerializeAsString()));
    std::vector<AttemptFinding> in_a_vector = {copy, f};
    EXPECT_EQ(RemediationPolicy::RemediationKey(copy), key);
    EXPECT_EQ(RemediationPolicy::RemediationKey(in_a_vector[0]), key);
    EXPECT_EQ(RemediationPolicy::RemediationKey(in_a_vector[1]), key);
  }
  EXPECT_THAT(key, HasSubstr(":p0=v:p1=v:p10=v"));
}

TEST_F(RemediationPolicyTest, AuditConfigRetriesWithANewFixElseFollowsThen) {
  // The audit finds nothing to repair: `then` decides.
  auto r = Decide(Finding("unsupported_head_size", dcufleet::v1::DIAGNOSIS_ACTION_AUDIT_CONFIG,
                          {{"then", "failover"}}));
  EXPECT_EQ(r.next, Next::kFailover);
  EXPECT_EQ(r.mark_broken, "none");
  r = Decide(Finding("config_or_tokenizer_error", dcufleet::v1::DIAGNOSIS_ACTION_AUDIT_CONFIG,
                     {{"then", "human"}}));
  EXPECT_EQ(r.next, Next::kHuman);
  EXPECT_THAT(r.message, HasSubstr("config_or_tokenizer_error"));
  // The audit now calls for a fix the attempt did not have: retry with it.
  preparer_.preparation.remediation = "hf_overrides";
  preparer_.preparation.remediation_detail = "--hf-overrides {\"head_dim\": 128}";
  r = Decide(Finding("unsupported_head_size", dcufleet::v1::DIAGNOSIS_ACTION_AUDIT_CONFIG,
                     {{"then", "failover"}}));
  EXPECT_EQ(r.next, Next::kRetryNow);
  EXPECT_THAT(r.applied, HasSubstr("hf_overrides"));
  // Already in force: the fix did not help.
  a_.set_config_remediation("hf_overrides");
  d_.mutable_status()->clear_applied_remediations();
  EXPECT_EQ(Decide(findings_[0]).next, Next::kFailover);
}

TEST_F(RemediationPolicyTest, FailoverAndHumanKinds) {
  auto r = Decide(Finding("triton_unsupported_gpu_target", dcufleet::v1::DIAGNOSIS_ACTION_FAILOVER,
                          {}, dcufleet::v1::REMEDIATION_KIND_FAILOVER));
  EXPECT_EQ(r.next, Next::kFailover);
  EXPECT_EQ(r.mark_broken, "stack_arch");
  r = Decide(Finding("hip_runtime_error", dcufleet::v1::DIAGNOSIS_ACTION_HUMAN, {},
                     dcufleet::v1::REMEDIATION_KIND_HUMAN));
  EXPECT_EQ(r.next, Next::kHuman);
  EXPECT_EQ(r.message, "hip_runtime_error: human");
}

TEST(RemediationPolicyHandledActions, CoverEveryActionTheEnumDeclares) {
  EXPECT_EQ(RemediationPolicy::HandledActions(), modelkit::AllDiagnosisActions());
}

// The shipped rules using audit_config, replan_memory and retry used to fall
// through to back-off; they load with the policy's handled set and act.
TEST_F(RemediationPolicyTest, ShippedRulesThatUsedToFallThroughNowAct) {
  const char* src = std::getenv("DCU_SOURCE_DIR");
  auto rules = modelkit::LoadDiagnosisRulesFile(
      std::string(src ? src : ".") + "/" + std::string(modelkit::kDefaultDiagnosisRulesPath),
      RemediationPolicy::HandledActions());
  ASSERT_TRUE(rules.ok()) << rules.status();
  const std::set<DiagnosisAction> once_ignored = {dcufleet::v1::DIAGNOSIS_ACTION_AUDIT_CONFIG,
                                                  dcufleet::v1::DIAGNOSIS_ACTION_REPLAN_MEMORY,
                                                  dcufleet::v1::DIAGNOSIS_ACTION_RETRY};
  std::set<std::string> acting_rules;
  for (const auto& rule : rules->rule()) {
    for (const auto& rem : rule.remediation()) {
      auto action = modelkit::DiagnosisActionFromName(rem.action());
      ASSERT_TRUE(action.has_value());
      if (!once_ignored.count(*action)) continue;
      Reset();
      std::map<std::string, std::string> params(rem.params().begin(), rem.params().end());
      auto r = Decide(Finding(rule.failure_class(), *action, params, rem.kind()));
      EXPECT_NE(r.next, Next::kBackoff) << rule.id() << " " << rem.action() << ": " << r.why;
      acting_rules.insert(rule.id());
    }
  }
  // Nine when these actions got handlers; two more rules use them since the
  // rules were widened on the grown corpus (session 3); one more with the
  // source-template round (config_or_tokenizer.sentencepiece_no_file audits
  // the tokenizer files like config_or_tokenizer.load) and one more
  // (hip.kernel_gpu_fault retries like hip.runtime_error), and one more with
  // the second sources round (nccl.collective_aborted retries like nccl.error);
  // one fewer since the seventh rules round removed the frames-only
  // oom.model_load_frames (it replanned memory; wrong on more unseen logs
  // than it was right on); one more with the eighth rules round
  // (hip.ggml_runtime_call retries once like hip.runtime_error); one more
  // with the tenth (nccl.store_barrier_timeout retries like nccl.error).
  EXPECT_EQ(acting_rules.size(), 15u);
}

TEST(UpgradeStoredFindingsTest, StringKindsAndActionsBecomeEnums) {
  dcufleet::v1::Deployment d;
  auto* f = d.mutable_status()->add_attempts()->add_findings();
  f->set_failure_class("missing_custom_op");
  f->set_legacy_remediation_kind("auto");
  f->set_legacy_remediation_action("set_env");
  EXPECT_TRUE(UpgradeStoredFindings(d));
  const auto& up = d.status().attempts(0).findings(0);
  EXPECT_EQ(up.remediation_kind(), dcufleet::v1::REMEDIATION_KIND_AUTO);
  EXPECT_EQ(up.remediation_action(), dcufleet::v1::DIAGNOSIS_ACTION_SET_ENV);
  EXPECT_TRUE(up.legacy_remediation_kind().empty());
  EXPECT_FALSE(UpgradeStoredFindings(d));
  // The key it is recorded under is what stored deployments hold.
  EXPECT_EQ(RemediationPolicy::RemediationKey(up), "missing_custom_op:set_env");
}

}  // namespace
}  // namespace dcu::controller
