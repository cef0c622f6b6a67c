#pragma once

#include <set>
#include <string>
#include <vector>

#include "controller/core/knowledge.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/diagnosis.pb.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::controller {

// What to do after a failed attempt, as RemediationPolicy decides it. The
// deployment already carries any change a remediation made (env, args,
// library order, avoided devices/ports, spec TP or max_model_len); the
// reconciler turns the decision into a phase, events and evidence.
struct RemediationDecision {
  enum class Next {
    kRetryNow,  // a remediation was applied: launch again in this pass
    kBackoff,   // retry the same plan after the back-off (failover after max)
    kFailover,  // the plan cannot work here: next plan now
    kHuman,     // stop: `message` says what a person must do
  };
  Next next = Next::kBackoff;
  // The finding acted on; nullptr when none was usable.
  const dcufleet::v1::AttemptFinding* finding = nullptr;
  // kRetryNow: what was changed. kBackoff / kFailover: why.
  std::string applied;
  std::string why;
  // kFailover: how the evidence is scoped ("stack_arch", "none", …).
  std::string mark_broken = "stack_arch";
  std::string message;
};

// What a handler may read besides the deployment and the failed attempt.
struct FailureContext {
  // The attempt's node as of this pass; nullptr when it is gone.
  const dcufleet::v1::NodeView* node = nullptr;
  // Bytes of one placed device (PlacedDeviceTotal), 0 when unknown.
  int64_t device_total = 0;
};

// The remediation engine: picks the first finding whose remediation is not
// spent (when two causes are stacked, fixing the first lets the second
// surface) and executes it, one handler per DiagnosisAction. The actions it
// handles are the only ones the controller lets rules name
// (modelkit::LoadDiagnosisRulesFile's `supported`), so no loaded rule falls
// through unexecuted.
class RemediationPolicy {
 public:
  // How many held ports one deployment avoids in turn (change_port).
  static constexpr int kPortsAvoidedAtMost = 8;
  RemediationPolicy(ModelCatalog* catalog, ModelPreparer* preparer, LaunchRenderer* renderer)
      : catalog_(catalog), preparer_(preparer), renderer_(renderer) {}

  // Every action Decide() executes (auto handlers plus failover and human).
  static const std::set<dcufleet::v1::DiagnosisAction>& HandledActions();

  // Decides on `findings` (ordered, most likely first) of the failed attempt
  // `a` of `d`, applying an auto remediation to `d` (and recording its key in
  // status.applied_remediations) when one is chosen.
  RemediationDecision Decide(dcufleet::v1::Deployment& d, const dcufleet::v1::Attempt& a,
                             const std::vector<dcufleet::v1::AttemptFinding>& findings,
                             const FailureContext& ctx) const;

  // The key a finding's remediation is recorded under ("class:action:k=v…";
  // the action by its rule name, as stored deployments have them).
  static std::string RemediationKey(const dcufleet::v1::AttemptFinding& f);

 private:
  // One auto action. Returns kRetryNow with `applied` set when it changed the
  // deployment; any other Next when there was nothing it could change.
  using Handler = RemediationDecision (RemediationPolicy::*)(
      dcufleet::v1::Deployment& d, const dcufleet::v1::Attempt& a,
      const dcufleet::v1::AttemptFinding& f, const FailureContext& ctx) const;
  static Handler HandlerFor(dcufleet::v1::DiagnosisAction action);

#define DCU_REMEDIATION_HANDLER(name)                                                        \
  RemediationDecision name(dcufleet::v1::Deployment& d, const dcufleet::v1::Attempt& a,     \
                           const dcufleet::v1::AttemptFinding& f, const FailureContext& ctx) \
      const
  DCU_REMEDIATION_HANDLER(SetEnv);
  DCU_REMEDIATION_HANDLER(PrependLdLibraryPath);
  DCU_REMEDIATION_HANDLER(AddArg);
  DCU_REMEDIATION_HANDLER(AuditConfig);
  DCU_REMEDIATION_HANDLER(ReapOrMoveDevices);
  DCU_REMEDIATION_HANDLER(ChangePort);
  DCU_REMEDIATION_HANDLER(ChangeTp);
  DCU_REMEDIATION_HANDLER(MoveToNodeWithModel);
  DCU_REMEDIATION_HANDLER(ReduceMaxModelLen);
  DCU_REMEDIATION_HANDLER(ReplanMemory);
  DCU_REMEDIATION_HANDLER(Retry);
#undef DCU_REMEDIATION_HANDLER

  // How many times a finding's remediation may be applied to one deployment
  // (1; `retry` takes params.max_attempts).
  static int ApplicationLimit(const dcufleet::v1::AttemptFinding& f);

  ModelCatalog* const catalog_;
  ModelPreparer* const preparer_;
  LaunchRenderer* const renderer_;
};

// Documents stored before AttemptFinding's kind and action were enums carry
// them as strings (fields 4 and 5): converts them in place. Returns true when
// something was converted.
bool UpgradeStoredFindings(dcufleet::v1::Deployment& d);

}  // namespace dcu::controller
