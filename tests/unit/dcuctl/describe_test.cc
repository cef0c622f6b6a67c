// dcuctl describe deployment, as a person reads it (issue 16).
#include <sstream>

#include "dcuctl/deploy_commands.h"
#include "dcufleet/v1/node_truth.pb.h"
#include "modelkit/memory_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

dcufleet::v1::GetDeploymentResponse WithFinding(dcufleet::v1::RemediationKind kind,
                                                dcufleet::v1::DiagnosisAction action,
                                                const std::string& evidence) {
  dcufleet::v1::GetDeploymentResponse resp;
  auto* d = resp.mutable_deployment();
  d->set_uid("d-123");
  d->mutable_spec()->set_name("qwen3-32b");
  d->mutable_spec()->set_model("qwen3-32b");
  auto* a = d->mutable_status()->add_attempts();
  a->set_number(1);
  a->set_phase(dcufleet::v1::INSTANCE_FAILED);
  auto* f = a->add_findings();
  f->set_failure_class("triton_unsupported_gpu_target");
  f->set_confidence(0.82);
  f->set_remediation_kind(kind);
  f->set_remediation_action(action);
  f->add_evidence(evidence);
  return resp;
}

TEST(DescribeDeployment, AFailoverSaysSoOnceAndTheEvidenceKeepsItsEnd) {
  const std::string evidence =
      "loc(\"/opt/conda/envs/vllm-0.11.0-dtk2604/lib/python3.10/site-packages/vllm/ops/triton/"
      "kernels/"
      "attention/ops/triton_flash_attention.py\":309:0): error: unsupported target: 'gfx928'";
  ASSERT_GT(evidence.size(), 160u);
  std::ostringstream out;
  PrintDeploymentDescription(WithFinding(dcufleet::v1::REMEDIATION_KIND_FAILOVER,
                                         dcufleet::v1::DIAGNOSIS_ACTION_FAILOVER, evidence),
                             out);
  EXPECT_THAT(out.str(), HasSubstr("triton_unsupported_gpu_target (82%) → failover\n"));
  EXPECT_THAT(out.str(), Not(HasSubstr("failover: failover")));
  EXPECT_THAT(out.str(), HasSubstr("unsupported target: 'gfx928'"));
  EXPECT_THAT(out.str(), HasSubstr("UID:         d-123"));
}

// A cause expected next (seed 000's triton behind a head-size refusal) is
// told as such, with why and what it rests on, and no action.
TEST(DescribeDeployment, ACauseExpectedNextSaysWhyAndWhatItRestsOn) {
  auto resp = WithFinding(dcufleet::v1::REMEDIATION_KIND_AUTO, dcufleet::v1::DIAGNOSIS_ACTION_SET_ENV,
                          "ValueError: Head size 80 is not supported by FlashAttention.");
  auto* first = resp.mutable_deployment()->mutable_status()->mutable_attempts(0)->mutable_findings(0);
  first->set_failure_class("unsupported_head_size");
  auto* next = resp.mutable_deployment()->mutable_status()->mutable_attempts(0)->add_findings();
  next->set_failure_class("triton_unsupported_gpu_target");
  next->set_confidence(0.72);
  next->set_expected_next(true);
  next->set_explanation("expected once unsupported_head_size is fixed: on gfx928 the DTK build of "
                        "triton 3.1.0 cannot target the arch");
  next->add_conditions("arch gfx928 (given)");
  next->add_conditions("triton 3.1.0 (given)");
  std::ostringstream out;
  PrintDeploymentDescription(resp, out);
  EXPECT_THAT(out.str(), HasSubstr("unsupported_head_size (82%) → auto: set_env\n"));
  EXPECT_THAT(out.str(), HasSubstr("    triton_unsupported_gpu_target (72%) expected next\n"
                                   "      why: expected once unsupported_head_size is fixed: on "
                                   "gfx928 the DTK build of triton 3.1.0 cannot target the arch\n"
                                   "      rests on: arch gfx928 (given), triton 3.1.0 (given)\n"));
  EXPECT_THAT(out.str(), Not(HasSubstr("(72%) →")));
}

TEST(DescribeDeployment, AnAutoActionIsNamed) {
  std::ostringstream out;
  PrintDeploymentDescription(WithFinding(dcufleet::v1::REMEDIATION_KIND_AUTO,
                                         dcufleet::v1::DIAGNOSIS_ACTION_SET_ENV, "short"),
                             out);
  EXPECT_THAT(out.str(), HasSubstr("(82%) → auto: set_env\n"));
  EXPECT_THAT(out.str(), HasSubstr("| short\n"));
}

// `node reap NODE --dry-run` printed ~200 lines of raw JSON in table mode.
// Issue 16: the unschedulable hint said "free devices … add nodes" when the
// model was simply missing from the node.
// A placement keeps its memory plan as figures (stop 45); describe shows the
// lines rendered from them, and an older document's stored lines as stored.
TEST(DescribeDeployment, MemoryLinesComeFromThePlacementsFiguresOrItsStoredLines) {
  dcufleet::v1::Deployment d;
  d.mutable_spec()->set_name("qwen3-8b");
  auto* a = d.mutable_status()->add_attempts();
  a->set_number(1);
  a->set_stack_id("vllm-0.11.0-bare");
  auto* pl = a->mutable_placement();
  pl->set_node("node-a");
  pl->set_tp(4);
  // The figures as the planner writes them: qwen3-8b (36 layers, 8 kv heads)
  // on a K100_AI.
  modelkit::ModelShape qwen3_8b;
  qwen3_8b.weight_bytes = 16384000000;
  qwen3_8b.num_attention_heads = 32;
  qwen3_8b.num_kv_heads = 8;
  qwen3_8b.head_dim = 128;
  qwen3_8b.attention_layers = 36;
  dcufleet::v1::MemoryPlanRequest req;
  req.set_tp(4);
  req.set_device_total_bytes(65520LL << 20);
  req.set_device_free_bytes(65520LL << 20);
  req.set_max_model_len(8192);
  req.set_max_num_seqs(16);
  *pl->mutable_memory_plan() = modelkit::PlanMemory(qwen3_8b, req);
  pl->mutable_memory_plan()->clear_explanation();  // as a placement keeps it
  pl->add_devices_in_use(0);
  pl->add_devices_in_use(1);
  std::ostringstream out;
  PrintPlan(d, out);
  EXPECT_THAT(out.str(), HasSubstr("Memory (per device):\n  weights: 15.26 GiB / TP 4 = 3.81 GiB per device\n"));
  // As the loadgen's qwen3-8b documents stored the line before stop 45.
  EXPECT_THAT(out.str(), HasSubstr("  KV cache per token per device: 2 (K,V) x 36 layers x 2 kv heads (8 / TP 4) x "
                                   "128 head_dim x 2 bytes = 36864 B\n"));
  EXPECT_THAT(out.str(), HasSubstr("budget: gpu_memory_utilization 0.9 x total 63.98 GiB = 57.59 GiB per device"));
  EXPECT_THAT(out.str(), HasSubstr("  avoided: devices 0, 1 run other instances\n"));
  EXPECT_THAT(out.str(), Not(HasSubstr("start-up rule"))) << "checked per device by the scheduler";

  pl->clear_memory_plan();
  pl->clear_devices_in_use();
  pl->add_memory_explanation("weights: 15.26 GiB / TP 4 = 3.81 GiB per device (stored)");
  std::ostringstream old;
  PrintPlan(d, old);
  EXPECT_THAT(old.str(), HasSubstr("Memory (per device):\n  weights: 15.26 GiB / TP 4 = 3.81 GiB per device (stored)\n"));
}

// The plans are the last placement's ranking: the stack the running attempt
// uses is marked, so a plan ranked "untested" that now serves says so.
// At zero, the last placement is said to be history, not where it runs.
TEST(DescribeDeployment, AtZeroTheLastPlacementIsHistory) {
  dcufleet::v1::GetDeploymentResponse resp;
  auto* d = resp.mutable_deployment();
  d->mutable_spec()->set_name("qwen3-32b");
  d->mutable_spec()->set_model("qwen3-32b");
  auto* a = d->mutable_status()->add_attempts();
  a->set_number(1);
  a->set_phase(dcufleet::v1::INSTANCE_STOPPED);
  a->set_ended_at_ms(1);
  a->mutable_placement()->set_node("node-k100");
  std::ostringstream running;
  PrintDeploymentDescription(resp, running);
  EXPECT_THAT(running.str(), HasSubstr("\nPlacement:\n  node node-k100"));
  d->mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  std::ostringstream at_zero;
  PrintDeploymentDescription(resp, at_zero);
  EXPECT_THAT(at_zero.str(), HasSubstr("\nLast placement (stopped: scaled to zero):\n  node node-k100"));
  EXPECT_THAT(at_zero.str(), Not(HasSubstr("\nPlacement:")));
}

TEST(DescribePlans, TheRunningAttemptsPlanIsMarked) {
  dcufleet::v1::Deployment d;
  auto* st = d.mutable_status();
  for (const char* id : {"vllm-0.11.0-bare", "vllm-0.9.2-bare"}) {
    auto* p = st->add_plans();
    p->set_stack_id(id);
    p->set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
    p->set_verdict_reason("untested on gfx928: no evidence");
  }
  auto* failed = st->add_attempts();
  failed->set_number(1);
  failed->set_stack_id("vllm-0.11.0-bare");
  failed->set_phase(dcufleet::v1::INSTANCE_FAILED);
  failed->set_ended_at_ms(1);
  auto* serving = st->add_attempts();
  serving->set_number(2);
  serving->set_stack_id("vllm-0.9.2-bare");
  serving->set_phase(dcufleet::v1::INSTANCE_READY);
  std::ostringstream out;
  PrintPlan(d, out);
  EXPECT_THAT(out.str(), HasSubstr("as ranked at the last placement"));
  EXPECT_THAT(out.str(), HasSubstr("2. vllm-0.9.2-bare  (bare)  untested on gfx928: no evidence  <- attempt 2, Ready\n"));
  EXPECT_THAT(out.str(), HasSubstr("1. vllm-0.11.0-bare  (bare)  untested on gfx928: no evidence\n"))
      << "an ended attempt marks nothing";
}

TEST(UnschedulableHints, NameWhatTheRejectionsSay) {
  dcufleet::v1::Deployment d;
  d.mutable_spec()->set_model("qwen3-32b");
  auto* r = d.mutable_status()->add_rejections();
  r->set_node("node-a");
  // The scheduler's words (docs/scenarios.md, scenario 5).
  r->set_reason("no usable stack installed (vllm-0.18-image-dtk2604 not installed); model "
                "qwen3-32b not found under the node's model roots");
  auto hints = UnschedulableHints(d);
  ASSERT_EQ(hints.size(), 2u);
  EXPECT_THAT(hints[0], HasSubstr("put qwen3-32b under a node's --model-root"));
  EXPECT_THAT(hints[1], HasSubstr("install a stack's env or image"));
  r->set_reason("model not on the node");
  hints = UnschedulableHints(d);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_THAT(hints[0], HasSubstr("put qwen3-32b under a node's --model-root"));
  auto* r2 = d.mutable_status()->add_rejections();
  r2->set_node("node-b");
  r2->set_reason("node is NotReady (no heartbeat for 20s)");
  hints = UnschedulableHints(d);
  ASSERT_EQ(hints.size(), 2u);
  EXPECT_THAT(hints[1], HasSubstr("bring the node's agent back"));
  d.mutable_status()->clear_rejections();
  d.mutable_status()->add_rejections()->set_reason("something new");
  hints = UnschedulableHints(d);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_THAT(hints[0], HasSubstr("dcuctl node reap NODE"));
}

TEST(ReapReport, TableModeIsASummary) {
  dcufleet::v1::ReapReport r;
  r.set_dry_run(true);
  auto* a = r.add_actions();
  a->set_pid(4242);
  a->set_action("sigterm");
  a->set_result("dry run");
  a->set_reason("leftover of ended instance 'qwen3-32b-1-abc'");
  a->set_cmdline("python -m vllm.entrypoints.openai.api_server --model /models/Qwen3-32B --port 8000");
  auto* m = r.add_memory();
  m->set_index(0);
  m->set_unreclaimed_before(59LL << 30);
  m->set_unreclaimed_after(59LL << 30);
  auto* f = r.add_findings();
  f->set_code("unreclaimed");
  f->set_message("device 0 has 59.00 GiB unreclaimed that no live process holds");
  std::ostringstream out;
  PrintReapReport(r, out);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("Dry run: nothing was signalled."));
  EXPECT_THAT(text, HasSubstr("4242"));
  EXPECT_THAT(text, HasSubstr("UNRECLAIMED NOW"));
  EXPECT_THAT(text, HasSubstr("59.00 GiB"));
  EXPECT_THAT(text, Not(HasSubstr("{")));
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_LT(lines, 15) << text;
}

}  // namespace
}  // namespace dcu::dcuctl
