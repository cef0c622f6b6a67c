#include "controller/core/remediation_policy.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/core/launch_planner.h"
#include "modelkit/diagnosis/diagnosis_rules.h"

namespace dcu::controller {

using dcufleet::v1::Attempt;
using dcufleet::v1::AttemptFinding;
using dcufleet::v1::Deployment;
using dcufleet::v1::DiagnosisAction;
using Next = RemediationDecision::Next;

namespace {

// Records the class a learned change answered (once).
void Answered(const AttemptFinding& f, dcufleet::v1::LearnedFix* learning) {
  for (const auto& c : learning->answered()) {
    if (c == f.failure_class()) return;
  }
  learning->add_answered(f.failure_class());
}

std::string Param(const AttemptFinding& f, const std::string& key) {
  auto it = f.params().find(key);
  return it == f.params().end() ? "" : it->second;
}

RemediationDecision RetryNow(std::string applied) {
  RemediationDecision r;
  r.next = Next::kRetryNow;
  r.applied = std::move(applied);
  return r;
}

RemediationDecision Backoff(std::string why) {
  RemediationDecision r;
  r.next = Next::kBackoff;
  r.why = std::move(why);
  return r;
}

}  // namespace

const std::set<DiagnosisAction>& RemediationPolicy::HandledActions() {
  static const auto* const kHandled = [] {
    auto* s = new std::set<DiagnosisAction>;
    for (DiagnosisAction a : modelkit::AllDiagnosisActions()) {
      if (HandlerFor(a) != nullptr || a == dcufleet::v1::DIAGNOSIS_ACTION_FAILOVER ||
          a == dcufleet::v1::DIAGNOSIS_ACTION_HUMAN) {
        s->insert(a);
      }
    }
    return s;
  }();
  return *kHandled;
}

RemediationPolicy::Handler RemediationPolicy::HandlerFor(DiagnosisAction action) {
  switch (action) {
    case dcufleet::v1::DIAGNOSIS_ACTION_SET_ENV: return &RemediationPolicy::SetEnv;
    case dcufleet::v1::DIAGNOSIS_ACTION_PREPEND_LD_LIBRARY_PATH:
      return &RemediationPolicy::PrependLdLibraryPath;
    case dcufleet::v1::DIAGNOSIS_ACTION_ADD_ARG: return &RemediationPolicy::AddArg;
    case dcufleet::v1::DIAGNOSIS_ACTION_AUDIT_CONFIG: return &RemediationPolicy::AuditConfig;
    case dcufleet::v1::DIAGNOSIS_ACTION_REAP_OR_MOVE_DEVICES:
      return &RemediationPolicy::ReapOrMoveDevices;
    case dcufleet::v1::DIAGNOSIS_ACTION_CHANGE_PORT: return &RemediationPolicy::ChangePort;
    case dcufleet::v1::DIAGNOSIS_ACTION_CHANGE_TP: return &RemediationPolicy::ChangeTp;
    case dcufleet::v1::DIAGNOSIS_ACTION_MOVE_TO_NODE_WITH_MODEL:
      return &RemediationPolicy::MoveToNodeWithModel;
    case dcufleet::v1::DIAGNOSIS_ACTION_REDUCE_MAX_MODEL_LEN:
      return &RemediationPolicy::ReduceMaxModelLen;
    case dcufleet::v1::DIAGNOSIS_ACTION_REPLAN_MEMORY: return &RemediationPolicy::ReplanMemory;
    case dcufleet::v1::DIAGNOSIS_ACTION_RETRY: return &RemediationPolicy::Retry;
    default: return nullptr;  // failover and human are kinds, not auto actions
  }
}

std::string RemediationPolicy::RemediationKey(const AttemptFinding& f) {
  std::string key =
      absl::StrCat(f.failure_class(), ":", modelkit::DiagnosisActionName(f.remediation_action()));
  // Protobuf map iteration order differs between copies of one map (a
  // finding read back from the store, a copy in a vector): sort so the key,
  // and with it the count of applications, is the same for equal findings.
  std::map<std::string, std::string> sorted(f.params().begin(), f.params().end());
  for (const auto& [k, v] : sorted) absl::StrAppend(&key, ":", k, "=", v);
  return key;
}

int RemediationPolicy::ApplicationLimit(const AttemptFinding& f) {
  // A port held by another process is avoided, and so is the next one found
  // held: each application avoids one more port (the failed attempt's). Once
  // only, a host whose ports a few other programs hold (seen in the suite:
  // instance ports inside the kernel's ephemeral range, taken by loopback
  // clients) backed off and then failed over away from a working stack.
  if (f.remediation_action() == dcufleet::v1::DIAGNOSIS_ACTION_CHANGE_PORT) {
    return kPortsAvoidedAtMost;
  }
  int limit = 1;
  if (f.remediation_action() == dcufleet::v1::DIAGNOSIS_ACTION_RETRY &&
      (!absl::SimpleAtoi(Param(f, "max_attempts"), &limit) || limit < 1)) {
    limit = 1;
  }
  return limit;
}

RemediationDecision RemediationPolicy::Decide(Deployment& d, const Attempt& a,
                                              const std::vector<AttemptFinding>& findings,
                                              const FailureContext& ctx) const {
  auto* st = d.mutable_status();
  const AttemptFinding* chosen = nullptr;
  std::string chosen_key;
  for (const auto& f : findings) {
    // A cause expected once another is fixed is not this failure's: acting
    // on it (a failover that marks a stack broken) once the first cause's
    // remediation is used up would blame what has not happened yet.
    if (f.expected_next()) continue;
    std::string key = RemediationKey(f);
    int applied = static_cast<int>(std::count(st->applied_remediations().begin(),
                                              st->applied_remediations().end(), key));
    if (f.remediation_kind() == dcufleet::v1::REMEDIATION_KIND_AUTO &&
        applied >= ApplicationLimit(f)) {
      continue;
    }
    chosen = &f;
    chosen_key = std::move(key);
    break;
  }
  // Nothing recognised (a kill, a crash without a message): transient until
  // proven otherwise — back off, and fail over after max attempts.
  if (chosen && chosen->failure_class() == "unknown") chosen = nullptr;
  if (!chosen) {
    return Backoff(findings.empty()
                       ? (a.message().empty() ? "no diagnosis" : a.message())
                       : absl::StrCat(findings.front().failure_class(),
                                      ", remediation already applied"));
  }
  RemediationDecision out;
  switch (chosen->remediation_kind()) {
    case dcufleet::v1::REMEDIATION_KIND_FAILOVER: {
      out.next = Next::kFailover;
      out.why = chosen->failure_class();
      std::string mb = Param(*chosen, "mark_broken");
      if (!mb.empty()) out.mark_broken = mb;
      break;
    }
    case dcufleet::v1::REMEDIATION_KIND_HUMAN:
      out.next = Next::kHuman;
      out.message = absl::StrCat(
          chosen->failure_class(), ": ", modelkit::DiagnosisActionName(chosen->remediation_action()),
          chosen->remediation_detail().empty() ? ""
                                               : absl::StrCat(" — ", chosen->remediation_detail()));
      break;
    case dcufleet::v1::REMEDIATION_KIND_AUTO: {
      Handler h = HandlerFor(chosen->remediation_action());
      // The loader admits only handled actions; a finding from elsewhere
      // (an old document) with none backs off as before.
      out = h ? (this->*h)(d, a, *chosen, ctx)
              : Backoff(absl::StrCat(chosen->failure_class(), " (",
                                     modelkit::DiagnosisActionName(chosen->remediation_action()),
                                     ")"));
      if (out.next == Next::kRetryNow) st->add_applied_remediations(chosen_key);
      break;
    }
    default:
      out = Backoff(findings.front().failure_class());
      break;
  }
  out.finding = chosen;
  return out;
}

// set_env: params are NAME -> value; they go into every later launch.
RemediationDecision RemediationPolicy::SetEnv(Deployment& d, const Attempt&,
                                              const AttemptFinding& f,
                                              const FailureContext&) const {
  std::string applied;
  std::map<std::string, std::string> sorted(f.params().begin(), f.params().end());
  auto* learning = d.mutable_status()->mutable_learning();
  for (const auto& [k, v] : sorted) {
    (*d.mutable_status()->mutable_extra_env())[k] = v;
    // A variable that makes the stack work on this arch is the stack's.
    (*learning->mutable_env())[k] = v;
    applied += absl::StrCat(applied.empty() ? "" : " ", k, "=", v);
  }
  Answered(f, learning);
  return RetryNow(absl::StrCat("env ", applied));
}

// prepend_ld_library_path: params.paths "a:b" goes before the order learned
// so far (LaunchPlanner puts the learned order before the recipe's).
RemediationDecision RemediationPolicy::PrependLdLibraryPath(Deployment& d, const Attempt&,
                                                            const AttemptFinding& f,
                                                            const FailureContext&) const {
  auto* st = d.mutable_status();
  std::vector<std::string> paths = absl::StrSplit(Param(f, "paths"), ':', absl::SkipEmpty());
  std::vector<std::string> merged = MergeLibraryOrder(
      paths, {st->ld_library_path_prefix().begin(), st->ld_library_path_prefix().end()});
  st->clear_ld_library_path_prefix();
  for (const auto& p : merged) st->add_ld_library_path_prefix(p);
  // A library order is the stack's on this arch (the rocm_smi directory of
  // the incident report): learned for every later launch of it.
  auto* learning = st->mutable_learning();
  std::vector<std::string> learned = MergeLibraryOrder(
      paths, {learning->ld_library_path_prefix().begin(), learning->ld_library_path_prefix().end()});
  learning->clear_ld_library_path_prefix();
  for (const auto& p : learned) learning->add_ld_library_path_prefix(p);
  Answered(f, learning);
  return RetryNow(absl::StrCat("LD_LIBRARY_PATH order ", absl::StrJoin(paths, ":")));
}

// add_arg: params.flag (or arg) and value; a value still holding a
// placeholder (or none) is the KV cache size from the memory plan on the
// placed devices' real size.
RemediationDecision RemediationPolicy::AddArg(Deployment& d, const Attempt& a,
                                              const AttemptFinding& f,
                                              const FailureContext& ctx) const {
  std::string flag = Param(f, "flag");
  if (flag.empty()) flag = Param(f, "arg");
  std::string value = Param(f, "value");
  if (value == "{kv_cache_bytes}" || value.empty() || value.find("${") != std::string::npos) {
    value = absl::StrCat(renderer_->KvCacheBytes(d.spec(), a.placement().tp(), ctx.device_total));
  }
  std::string applied;
  if (!flag.empty()) {
    d.mutable_status()->add_extra_args(flag);
    if (!value.empty()) d.mutable_status()->add_extra_args(value);
    applied = absl::StrCat(flag, value.empty() ? "" : " ", value);
  }
  return RetryNow(applied);
}

// audit_config (rules for head sizes and config/tokenizer errors): the config
// audit runs before every launch and its fix is in force, so the audit is
// re-run here against what the node reports now. When it now calls for a fix
// the failed attempt did not have (the files changed, or a fix became
// possible), retry: the next launch carries it. Otherwise the config is not
// the cause the audit can repair, and params.then decides: "failover" (this
// stack cannot run this model's config: next plan, evidence scoped to the
// model) or "human" (the default: stop and say so).
RemediationDecision RemediationPolicy::AuditConfig(Deployment& d, const Attempt& a,
                                                   const AttemptFinding& f,
                                                   const FailureContext& ctx) const {
  if (ctx.node) {
    std::string path = catalog_->ModelPathOnNode(d.spec().model(), *ctx.node);
    if (!path.empty()) {
      dcufleet::v1::Plan plan;
      plan.set_stack_id(a.stack_id());
      plan.set_runtime_kind(a.runtime_kind());
      plan.set_arch(a.placement().arch());
      ModelPreparation prep =
          preparer_->PrepareModel(d.spec().model(), *ctx.node, path, plan, a.placement().tp());
      if (prep.blocking_reason.empty() && !prep.remediation.empty() &&
          prep.remediation != a.config_remediation()) {
        return RetryNow(absl::StrCat("config audit: ", prep.remediation, " ",
                                     prep.remediation_detail));
      }
    }
  }
  RemediationDecision r;
  if (Param(f, "then") == "failover") {
    r.next = Next::kFailover;
    r.why = absl::StrCat(f.failure_class(), " (config audit clean)");
    r.mark_broken = "none";
    return r;
  }
  r.next = Next::kHuman;
  r.message = absl::StrCat(f.failure_class(), ": the config audit finds nothing it can repair",
                           f.remediation_detail().empty()
                               ? ""
                               : absl::StrCat(" — ", f.remediation_detail()));
  return r;
}

// reap_or_move_devices: the devices' view was below the start-up rule; the
// next placement avoids them (the agent reaps our own leftovers meanwhile).
RemediationDecision RemediationPolicy::ReapOrMoveDevices(Deployment& d, const Attempt& a,
                                                         const AttemptFinding&,
                                                         const FailureContext&) const {
  for (int i : a.placement().device_indices()) {
    d.mutable_status()->add_avoided_devices(absl::StrCat(a.placement().node(), "/", i));
  }
  return RetryNow(absl::StrCat("avoid devices [", absl::StrJoin(a.placement().device_indices(), ","),
                               "] on '", a.placement().node(),
                               "' (device view below the start-up rule)"));
}

RemediationDecision RemediationPolicy::ChangePort(Deployment& d, const Attempt& a,
                                                  const AttemptFinding&,
                                                  const FailureContext&) const {
  d.mutable_status()->add_avoided_ports(a.placement().port());
  return RetryNow(absl::StrCat("avoid port ", a.placement().port()));
}

// change_tp: TP 0 lets the scheduler choose one the heads divide.
RemediationDecision RemediationPolicy::ChangeTp(Deployment& d, const Attempt&,
                                                const AttemptFinding&,
                                                const FailureContext&) const {
  d.mutable_spec()->set_tp(0);
  return RetryNow("choose a TP that divides the heads");
}

RemediationDecision RemediationPolicy::MoveToNodeWithModel(Deployment& d, const Attempt& a,
                                                           const AttemptFinding&,
                                                           const FailureContext& ctx) const {
  if (ctx.node) {
    for (const auto& dev : ctx.node->inventory().devices()) {
      d.mutable_status()->add_avoided_devices(absl::StrCat(a.placement().node(), "/", dev.index()));
    }
  }
  return RetryNow(absl::StrCat("avoid node '", a.placement().node(), "' (model not usable there)"));
}

// reduce_max_model_len: to params.max_model_len (what the KV cache holds,
// from the log) when it is a reduction, else half.
RemediationDecision RemediationPolicy::ReduceMaxModelLen(Deployment& d, const Attempt&,
                                                         const AttemptFinding& f,
                                                         const FailureContext&) const {
  int64_t len = 0;
  if (absl::SimpleAtoi(Param(f, "max_model_len"), &len) && len >= 16 &&
      len < d.spec().max_model_len()) {
    d.mutable_spec()->set_max_model_len(len);
    return RetryNow(absl::StrCat("max_model_len ", len));
  }
  d.mutable_spec()->set_max_model_len(std::max<int64_t>(16, d.spec().max_model_len() / 2));
  return RetryNow(absl::StrCat("max_model_len halved to ", d.spec().max_model_len()));
}

// replan_memory (weights or KV cache do not fit the chosen devices, rules
// oom.model_load, no_cache_blocks.*, max_model_len.vllm): plan again with
// more devices — the next TP the model's heads allow above the failed one,
// so each device holds less. With no larger TP there is nothing to replan:
// back off (and fail over after max attempts), as before.
RemediationDecision RemediationPolicy::ReplanMemory(Deployment& d, const Attempt& a,
                                                    const AttemptFinding& f,
                                                    const FailureContext&) const {
  auto model = catalog_->Model(d.spec().model());
  const int failed_tp = a.placement().tp();
  if (model.ok()) {
    for (int tp : model->valid_tp) {
      if (tp > failed_tp) {
        d.mutable_spec()->set_tp(tp);
        std::string reason = Param(f, "reason");
        return RetryNow(absl::StrCat("TP ", failed_tp, " → ", tp, " (more memory for ",
                                     reason.empty() ? "the model" : reason, ")"));
      }
    }
  }
  return Backoff(absl::StrCat(f.failure_class(), " (no TP above ", failed_tp, " to replan with)"));
}

// retry (transient NCCL/RCCL and HIP runtime failures): launch the same plan
// again now, without back-off, at most params.max_attempts times (see
// ApplicationLimit); params.env_hint "NAME=value" is set for it (the NCCL
// rules ask for NCCL_DEBUG=INFO so a repeat says why). Once spent, the
// failure backs off like any other.
RemediationDecision RemediationPolicy::Retry(Deployment& d, const Attempt&,
                                             const AttemptFinding& f,
                                             const FailureContext&) const {
  std::string hint = Param(f, "env_hint");
  std::vector<std::string> kv = absl::StrSplit(hint, absl::MaxSplits('=', 1));
  if (kv.size() == 2 && !kv[0].empty()) {
    (*d.mutable_status()->mutable_extra_env())[kv[0]] = kv[1];
    return RetryNow(absl::StrCat("retry with ", hint));
  }
  return RetryNow("retry");
}

bool UpgradeStoredFindings(Deployment& d) {
  bool changed = false;
  for (auto& a : *d.mutable_status()->mutable_attempts()) {
    for (auto& f : *a.mutable_findings()) {
      if (f.legacy_remediation_kind().empty() && f.legacy_remediation_action().empty()) continue;
      const std::string& kind = f.legacy_remediation_kind();
      if (kind == "auto") f.set_remediation_kind(dcufleet::v1::REMEDIATION_KIND_AUTO);
      if (kind == "failover") f.set_remediation_kind(dcufleet::v1::REMEDIATION_KIND_FAILOVER);
      if (kind == "human") f.set_remediation_kind(dcufleet::v1::REMEDIATION_KIND_HUMAN);
      if (auto action = modelkit::DiagnosisActionFromName(f.legacy_remediation_action())) {
        f.set_remediation_action(*action);
      }
      f.clear_legacy_remediation_kind();
      f.clear_legacy_remediation_action();
      changed = true;
    }
  }
  return changed;
}

}  // namespace dcu::controller
