// dcuctl describe deployment, as a person reads it (issue 16).
#include <sstream>

#include "dcuctl/deploy_commands.h"
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
      "loc(\"/work/main/.demo/sim/k100/envs/vllm-0.11.0-dtk2604/lib/python3.10/site-packages/vllm/"
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

TEST(DescribeDeployment, AnAutoActionIsNamed) {
  std::ostringstream out;
  PrintDeploymentDescription(WithFinding(dcufleet::v1::REMEDIATION_KIND_AUTO,
                                         dcufleet::v1::DIAGNOSIS_ACTION_SET_ENV, "short"),
                             out);
  EXPECT_THAT(out.str(), HasSubstr("(82%) → auto: set_env\n"));
  EXPECT_THAT(out.str(), HasSubstr("| short\n"));
}

}  // namespace
}  // namespace dcu::dcuctl
