// DeployController: one deployment's step — Observe() says what happened,
// Step() acts on it: launch (LaunchPlanner), follow the reported instance,
// end attempts on lost nodes, diagnose and remediate (RemediationPolicy).

#include <algorithm>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "common/enum_names.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/transfer_text.h"
#include "common/units.h"
#include "controller/core/deploy_step_context.h"
#include "controller/core/model_sources.h"
#include "controller/core/replica_set.h"
#include "modelkit/startup_progress.h"
#include "modelkit/startup_stall.h"
#include "modelkit/learned_fix.h"
#include "modelkit/verdict.h"

namespace dcu::controller {

using dcufleet::v1::Attempt;
using dcufleet::v1::Deployment;
using dcufleet::v1::DeploymentSpec;
using dcufleet::v1::InstancePhase;
using dcufleet::v1::InstanceSpec;
using dcufleet::v1::InstanceStatus;
using dcufleet::v1::NodeView;
using deploy_internal::ActiveAttempt;
using deploy_internal::AttemptActive;
using deploy_internal::FindInstance;
using deploy_internal::HasActiveAttempt;
using deploy_internal::InstancePhaseName;

bool DeployController::TryLaunch(Deployment& d, StepContext& ctx) {
  auto* st = d.mutable_status();
  ScheduleInput in = MakeScheduleInput(d, ctx);
  // A placed deployment keeps only the count of nodes passed over (naming
  // them costs string work per placement); an unschedulable one names them.
  in.max_rejections_placed = 0;
  LaunchPlan plan =
      planner_.Plan(d, in, [&ctx](const std::string& n) { return ctx.Node(n); });
  const ScheduleResult& r = plan.schedule;
  if (d.spec().node().empty()) ctx.first_usable[CursorKey(d.spec())] = r.first_usable;
  st->clear_plans();
  st->clear_excluded_plans();
  // Moved: nothing below reads the result's plan lists (only r.plan).
  for (auto& p : plan.schedule.plans) *st->add_plans() = std::move(p);
  for (auto& p : plan.schedule.excluded_plans) *st->add_excluded_plans() = std::move(p);
  if (plan.outcome == LaunchPlan::Outcome::kCopyFirst) return AwaitModelCopy(d, ctx, r);
  if (!r.placed) {
    std::vector<std::string> lines;
    for (const auto& rj : r.rejections) lines.push_back(absl::StrCat(rj.node(), ": ", rj.reason()));
    // Fits no registered node: a node pool may provide one (issue 20).
    if (bool changed = false; ProvisionFromPool(d, lines, ctx, &changed)) {
      st->clear_rejections();
      for (const auto& rj : r.rejections) *st->add_rejections() = rj;
      return changed;
    }
    std::string msg = absl::StrJoin(lines, "; ");
    bool changed = st->phase() != dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE || st->message() != msg;
    st->clear_rejections();
    for (const auto& rj : r.rejections) *st->add_rejections() = rj;
    if (changed) {
      st->set_phase(dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
      st->set_message(msg);
      AddEvent(ctx, d, "Warning", "Unschedulable", msg);
    }
    return changed;
  }
  st->clear_rejections();
  for (const auto& rj : r.rejections) *st->add_rejections() = rj;
  const ModelPreparation& prep = plan.preparation;
  // The audit's findings are an event when they change, not once per
  // attempt (the long ConfigAudit line repeated for every retry).
  std::string previous_audit;
  for (const auto& f : st->findings()) absl::StrAppend(&previous_audit, f.code(), ";", f.message(), "\n");
  st->clear_findings();
  for (const auto& f : prep.findings) *st->add_findings() = f;
  std::string audit;
  for (const auto& f : st->findings()) absl::StrAppend(&audit, f.code(), ";", f.message(), "\n");
  const bool audit_changed = audit != previous_audit;
  if (plan.outcome == LaunchPlan::Outcome::kModelUnusable) {
    st->set_phase(dcufleet::v1::DEPLOYMENT_FAILED);
    st->set_message(plan.error);
    AddEvent(ctx, d, "Warning", "ModelUnusable", plan.error);
    return true;
  }
  if (plan.outcome == LaunchPlan::Outcome::kRenderFailed) {
    st->set_phase(dcufleet::v1::DEPLOYMENT_FAILED);
    st->set_message(plan.error);
    AddEvent(ctx, d, "Warning", "RenderFailed", plan.error);
    return true;
  }
  InstanceSpec& spec = plan.instance;
  // Per-attempt fields: the only ones a dry run cannot know.
  int number = st->attempts_size() + 1;
  spec.set_instance_id(absl::StrCat(d.spec().name(),
                                    d.replica() > 0 ? absl::StrCat("-r", d.replica()) : "", "-",
                                    number, "-", common::NewId("i").substr(2, 6)));
  spec.set_attempt(number);

  Attempt* a = st->add_attempts();
  if (metrics_) metrics_->OnAttempt();
  a->set_number(number);
  a->set_instance_id(spec.instance_id());
  a->set_stack_id(r.plan.stack_id());
  a->set_runtime_kind(r.plan.runtime_kind());
  *a->mutable_placement() = r.placement;
  a->set_phase(dcufleet::v1::INSTANCE_PENDING);
  a->set_created_at_ms(ctx.now_ms);
  a->set_config_remediation(prep.remediation);
  for (const auto& rem : st->applied_remediations()) a->add_remediations(rem);
  if (!prep.remediation.empty()) a->add_remediations(absl::StrCat("config: ", prep.remediation_detail));
  *a->mutable_instance() = std::move(spec);
  ctx.Take(r.placement);
  if (d.spec().replicas() > 1) ctx.JoinNode(d.spec().name(), r.placement.node());
  ctx.touched.insert(r.placement.node());

  for (int i = 0; i < st->plans_size(); ++i) {
    if (st->plans(i).stack_id() == r.plan.stack_id()) st->set_current_plan(i);
  }
  st->set_phase(dcufleet::v1::DEPLOYMENT_LAUNCHING);
  st->set_message(absl::StrCat("attempt ", number, ": ", r.plan.stack_id(), " on '",
                               r.placement.node(), "'"));
  if (!prep.findings.empty() && audit_changed) {
    std::vector<std::string> codes;
    for (const auto& f : prep.findings) codes.push_back(absl::StrCat(f.code(), " (", f.message(), ")"));
    AddEvent(ctx, d, "Warning", "ConfigAudit", absl::StrJoin(codes, "; "));
  }
  if (!prep.remediation.empty()) {
    AddEvent(ctx, d, "Normal", "ConfigRemediated",
             absl::StrCat(prep.remediation, ": ", prep.remediation_detail,
                          " (the model's own files are untouched)"));
  }
  AddEvent(ctx, d, "Normal", "Scheduled",
           absl::StrCat("attempt ", number, ": node '", r.placement.node(), "' (", r.placement.arch(),
                        ") devices [", absl::StrJoin(r.placement.device_indices(), ","), "] TP=",
                        r.placement.tp(), " port ", r.placement.port(), ", plan ", r.plan.rank(), " ",
                        r.plan.stack_id(), " (", common::RuntimeKindName(r.plan.runtime_kind()), ", ",
                        common::VerdictStateName(r.plan.verdict()), ")"));
  return true;
}

DeployController::Transition DeployController::Observe(const Deployment& d,
                                                       const StepContext& ctx,
                                                       ObservedInputs* inputs) const {
  // Pure: what Step() would do to `d`, or kNone when nothing has happened to
  // it. The pass selects deployments with it, and Step() acts on its answer,
  // so the two cannot disagree. Every node and every time it reads goes
  // through these two, so `inputs` is complete (ObserveMemo relies on it).
  auto node_named = [&](const std::string& name) -> const NodeView* {
    const size_t i = ctx.Position(name);
    if (inputs) inputs->nodes.emplace_back(i, i == std::string::npos ? 0 : ctx.revisions[i]);
    return i == std::string::npos ? nullptr : ctx.views[i].get();
  };
  // True once `at_ms` has passed; until then the answer holds until it does.
  auto reached = [&](int64_t at_ms) {
    if (ctx.now_ms >= at_ms) return true;
    if (inputs) inputs->recheck_at_ms = std::min(inputs->recheck_at_ms, at_ms);
    return false;
  };
  const auto& st = d.status();
  const Attempt* a = nullptr;
  if (!st.attempts().empty() && AttemptActive(st.attempts(st.attempts_size() - 1))) {
    a = &st.attempts(st.attempts_size() - 1);
  }
  // A replica being removed, or the document of a deployment scaled to
  // zero: its instance is stopped, nothing is placed for it.
  if (!deploy_internal::WantsInstance(d)) {
    if (!a) return Transition::kNone;
    const NodeView* nv = node_named(a->placement().node());
    if (!nv || nv->state() == dcufleet::v1::NODE_LOST) return Transition::kStopDeleted;
    // A node that is not connected (NotReady: after a controller restart,
    // before its agent is back) cannot say whether the instance still runs:
    // the deletion waits for it to report (or to be declared Lost) instead
    // of declaring the instance stopped while it still serves.
    if (nv->state() != dcufleet::v1::NODE_READY) return Transition::kNone;
    const InstanceStatus* is = FindInstance(*nv, a->instance_id());
    bool still_reported = is != nullptr && is->phase() != dcufleet::v1::INSTANCE_STOPPED;
    return still_reported ? Transition::kNone : Transition::kStopDeleted;
  }
  // A lost node is back and has said what it runs (its hello lists its
  // instances): settle any orphan on it before anything else.
  for (const auto& o : st.attempts()) {
    if (!o.orphaned()) continue;
    const NodeView* on = node_named(o.placement().node());
    if (on && on->state() == dcufleet::v1::NODE_READY) return Transition::kReconcileOrphan;
  }
  if (!a) {
    if (st.phase() == dcufleet::v1::DEPLOYMENT_FAILED ||
        st.phase() == dcufleet::v1::DEPLOYMENT_READY) {
      return Transition::kNone;
    }
    return reached(st.next_attempt_at_ms()) ? Transition::kLaunch : Transition::kNone;
  }
  const NodeView* node = node_named(a->placement().node());
  if (!node || node->state() == dcufleet::v1::NODE_LOST) return Transition::kNodeLost;
  const InstanceStatus* is = FindInstance(*node, a->instance_id());
  if (!is) {
    // Not reported yet. The agent reports failures itself; only when the node
    // is silent about it well past the start-up deadline does the controller
    // give up on the attempt.
    int64_t deadline = a->created_at_ms() + d.spec().startup_timeout_s() * 1000LL +
                       absl::ToInt64Milliseconds(options_.report_grace);
    return node->state() == dcufleet::v1::NODE_READY && reached(deadline + 1)
               ? Transition::kReportOverdue
               : Transition::kNone;
  }
  if (a->phase() != is->phase() || a->shards_loaded() != is->shards_loaded() ||
      a->shards_total() != is->shards_total() || is->message() != a->message() ||
      modelkit::StartupReportDiffers(a->startup(), is->startup()) ||
      (is->phase() == dcufleet::v1::INSTANCE_READY &&
       st.phase() != dcufleet::v1::DEPLOYMENT_READY) ||
      is->phase() == dcufleet::v1::INSTANCE_FAILED) {
    return Transition::kFollowReport;
  }
  return Transition::kNone;
}

void DeployController::EndOnLostNode(Deployment& d, Attempt& a, StepContext& ctx) {
  auto* st = d.mutable_status();
  a.set_ended_at_ms(ctx.now_ms);
  a.set_phase(dcufleet::v1::INSTANCE_FAILED);
  a.set_message(absl::StrCat("node '", a.placement().node(), "' lost"));
  // A lost node may only be partitioned, with the instance still serving:
  // it stays in the node's desired set, so the agent keeps it when the node
  // returns, and ReconcileOrphan decides then (keep it when nothing replaced
  // it, stop it once a replacement is Ready).
  a.set_orphaned(true);
  st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
  st->set_ready_at_ms(0);
  st->set_endpoint("");
  st->set_message(absl::StrCat("rescheduling: node '", a.placement().node(), "' lost"));
  st->set_next_attempt_at_ms(0);
  AddEvent(ctx, d, "Warning", "NodeLost",
           absl::StrCat("node '", a.placement().node(), "' lost; rescheduling elsewhere"));
}

void DeployController::ReconcileOrphan(Deployment& d, StepContext& ctx) {
  auto* st = d.mutable_status();
  Attempt* orphan = nullptr;
  const NodeView* node = nullptr;
  for (auto& o : *st->mutable_attempts()) {
    if (!o.orphaned()) continue;
    const NodeView* on = ctx.Node(o.placement().node());
    if (on && on->state() == dcufleet::v1::NODE_READY) {
      orphan = &o;
      node = on;
      break;
    }
  }
  if (!orphan) return;
  orphan->set_orphaned(false);
  ctx.touched.insert(node->name());
  const InstanceStatus* is = FindInstance(*node, orphan->instance_id());
  const bool alive = is != nullptr && is->phase() != dcufleet::v1::INSTANCE_FAILED &&
                     is->phase() != dcufleet::v1::INSTANCE_STOPPED;
  Attempt* current = ActiveAttempt(d);
  const bool replacement_ready = current != nullptr &&
                                 current->phase() == dcufleet::v1::INSTANCE_READY &&
                                 st->phase() == dcufleet::v1::DEPLOYMENT_READY;
  if (!alive) {
    ctx.Release(orphan->placement());
    AddEvent(ctx, d, "Normal", "OrphanGone",
             absl::StrCat("node '", node->name(), "' is back without instance '",
                          orphan->instance_id(), "'",
                          is ? absl::StrCat(" (", InstancePhaseName(is->phase()), ")") : ""));
    return;
  }
  if (replacement_ready) {
    // Exactly one of the two goes, and only now that the replacement serves.
    ctx.Release(orphan->placement());
    orphan->set_message(absl::StrCat(orphan->message(), "; stopped on return: attempt ",
                                     current->number(), " replaced it"));
    AddEvent(ctx, d, "Normal", "DuplicateStopped",
             absl::StrCat("node '", node->name(), "' is back still running instance '",
                          orphan->instance_id(), "'; its replacement '", current->instance_id(),
                          "' is Ready on node '", current->placement().node(), "': stopping '",
                          orphan->instance_id(), "'"));
    return;
  }
  // Nothing replaced it: keep the running instance (same id, same spec, so
  // the agent keeps its process) and stop a replacement still starting.
  if (current) {
    current->set_ended_at_ms(ctx.now_ms);
    current->set_phase(dcufleet::v1::INSTANCE_STOPPED);
    current->set_message(absl::StrCat("superseded: instance '", orphan->instance_id(),
                                      "' still runs on returned node '", node->name(), "'"));
    ctx.Release(current->placement());
    ctx.touched.insert(current->placement().node());
  }
  const int from = orphan->number();
  Attempt readopted;
  readopted.set_number(st->attempts_size() + 1);
  readopted.set_instance_id(orphan->instance_id());
  readopted.set_stack_id(orphan->stack_id());
  readopted.set_runtime_kind(orphan->runtime_kind());
  *readopted.mutable_placement() = orphan->placement();
  *readopted.mutable_instance() = orphan->instance();
  *readopted.mutable_remediations() = orphan->remediations();
  readopted.set_config_remediation(orphan->config_remediation());
  readopted.set_created_at_ms(orphan->created_at_ms());
  readopted.set_phase(dcufleet::v1::INSTANCE_PENDING);
  readopted.set_readopted_from(from);
  orphan->set_message(absl::StrCat(orphan->message(), "; re-adopted as attempt ",
                                   readopted.number()));
  Attempt& a = *st->add_attempts() = std::move(readopted);
  ctx.Take(a.placement());
  st->set_phase(dcufleet::v1::DEPLOYMENT_LAUNCHING);
  st->set_next_attempt_at_ms(0);
  st->set_message(absl::StrCat("re-adopted instance '", a.instance_id(), "' on returned node '",
                               node->name(), "'"));
  AddEvent(ctx, d, "Normal", "Readopted",
           absl::StrCat("node '", node->name(), "' is back still running instance '",
                        a.instance_id(), "' (attempt ", from, "), and nothing replaced it: kept as attempt ",
                        a.number(),
                        current ? absl::StrCat("; stopping replacement '", current->instance_id(),
                                               "', not yet Ready")
                                : ""));
  FollowReport(d, a, *node, *is, ctx);
}

void DeployController::FollowReport(Deployment& d, Attempt& a, const NodeView& node,
                                    const InstanceStatus& instance, StepContext& ctx) {
  auto* st = d.mutable_status();
  const InstanceStatus* is = &instance;
  if (a.phase() != is->phase()) {
    InstancePhase old = a.phase();
    a.set_phase(is->phase());
    if (is->phase() != dcufleet::v1::INSTANCE_READY && is->phase() != dcufleet::v1::INSTANCE_FAILED) {
      AddEvent(ctx, d, "Normal", InstancePhaseName(is->phase()),
               absl::StrCat("instance '", a.instance_id(), "' ", InstancePhaseName(old), " -> ",
                            InstancePhaseName(is->phase()),
                            is->message().empty() ? "" : absl::StrCat(": ", is->message())));
    }
  }
  if (a.shards_loaded() != is->shards_loaded() || a.shards_total() != is->shards_total()) {
    a.set_shards_loaded(is->shards_loaded());
    a.set_shards_total(is->shards_total());
    if (is->shards_total() > 0 &&
        (is->shards_loaded() == is->shards_total() || is->shards_loaded() % 4 == 1)) {
      AddEvent(ctx, d, "Normal", "Loading",
               absl::StrCat("loading safetensors shards ", is->shards_loaded(), "/",
                            is->shards_total()));
    }
  }
  if (is->message() != a.message()) {
    a.set_message(is->message());
  }
  if (is->has_startup()) {
    // Start-up phases as events, in the order the agent saw them; the
    // figures stay on the attempt after Ready (describe shows them).
    if (a.startup().phase() != is->startup().phase() ||
        a.startup().activity() != is->startup().activity()) {
      AddEvent(ctx, d, "Normal", "StartupPhase",
               absl::StrCat("instance '", a.instance_id(), "' ",
                            modelkit::DescribeStartupPlace(is->startup())));
    }
    *a.mutable_startup() = is->startup();
  }
  if (is->phase() == dcufleet::v1::INSTANCE_READY && st->phase() != dcufleet::v1::DEPLOYMENT_READY) {
    a.set_ready_at_ms(is->ready_at_ms() ? is->ready_at_ms() : ctx.now_ms);
    st->set_phase(dcufleet::v1::DEPLOYMENT_READY);
    st->set_ready_at_ms(ctx.now_ms);
    // Where clients (and the gateway) reach it: the node's advertised or
    // observed address; its name only when no address is known.
    st->set_endpoint(common::JoinHostPort(node.address().empty() ? node.name() : node.address(),
                                          a.placement().port()));
    st->set_message(absl::StrCat("serving ", d.spec().served_model_name(), " on node '",
                                 node.name(), "' port ", a.placement().port()));
    AddEvent(ctx, d, "Normal", "Ready",
             absl::StrCat("instance '", a.instance_id(), "' serving on node '", node.name(),
                          "' port ", a.placement().port(), " (", a.stack_id(), ", ",
                          common::HumanDuration(ctx.now_ms - a.created_at_ms()),
                          " after launch)"));
    LaunchOutcomeRecord rec;
    rec.stack_id = a.stack_id();
    rec.node = node.name();
    rec.arch = a.placement().arch();
    rec.model = d.spec().model();
    rec.tp = a.placement().tp();
    rec.ready = true;
    rec.instance_id = a.instance_id();
    rec.remediation = absl::StrJoin(a.remediations(), "; ");
    rec.duration_ms = ctx.now_ms - a.created_at_ms();
    rec.config_ok = a.config_remediation().empty();
    // What made it Ready becomes the stack's on this arch (issue 15): the fix
    // the launch was rendered with, and what this deployment learned since.
    rec.carried_fix = a.instance().learned_fix().evidence_id();
    rec.learned_fix = modelkit::MergeLearnedFixes(a.instance().learned_fix(), st->learning());
    // A re-adopted instance's launch was recorded when it first got Ready.
    if (a.readopted_from() == 0) {
      knowledge_->RecordOutcome(rec);
      ctx.plans.clear();
    }
    return;
  }
  if (is->phase() == dcufleet::v1::INSTANCE_FAILED) {
    a.set_ended_at_ms(ctx.now_ms);
    a.set_exit_code(is->exit_code());
    a.set_term_signal(is->term_signal());
    a.clear_log_tail();
    for (const auto& l : is->log_tail()) a.add_log_tail(l);
    HandleFailure(d, a, ctx);
  }
}

void DeployController::HandleFailure(Deployment& d, Attempt& a, StepContext& ctx) {
  auto* st = d.mutable_status();
  st->set_ready_at_ms(0);
  st->set_endpoint("");
  std::vector<std::string> tail(a.log_tail().begin(), a.log_tail().end());
  // A launch that failed before printing anything: its message is the log.
  if (tail.empty() && !a.message().empty()) tail.push_back(a.message());
  std::vector<dcufleet::v1::AttemptFinding> findings;
  const NodeView* placed_node = ctx.Node(a.placement().node());
  const int64_t device_total = placed_node ? PlacedDeviceTotal(*placed_node, a.placement()) : 0;
  if (a.ready_at_ms() != 0 && a.term_signal() != 0) {
    // A signal death while serving is its own, obvious class: someone or
    // something (the OOM killer, an operator) ended a healthy server. Its
    // log tail is access lines; reading a cause into them gave
    // "unknown (10%) → human". Restarted with back-off; never the stack's.
    dcufleet::v1::AttemptFinding f;
    f.set_failure_class("signal_while_serving");
    f.set_confidence(1.0);
    f.add_evidence(a.message());
    f.set_remediation_detail("restarted with back-off; if it repeats, look for the OOM killer "
                             "(dmesg) or whoever sends the signal");
    findings.push_back(std::move(f));
  } else if (a.startup().stopped_by() != dcufleet::v1::STARTUP_STOP_UNSPECIFIED) {
    // The agent ended a start-up that made no progress (issue 23): what
    // happened is certain and comes first, with the phase it was stuck in;
    // what the log shows besides (a NCCL WARN before the hang) follows.
    findings.push_back(modelkit::DiagnoseStartupStop(a.startup(), a.message()));
    if (diagnoser_ && !a.log_tail().empty()) {
      for (auto& f :
           diagnoser_->Diagnose(tail, knowledge_->DiagnosisFacts(d.spec(), a, device_total))) {
        if (f.failure_class() != "unknown") findings.push_back(std::move(f));
      }
    }
  } else if (diagnoser_ && !tail.empty()) {
    findings = diagnoser_->Diagnose(tail, knowledge_->DiagnosisFacts(d.spec(), a, device_total));
  }
  a.clear_findings();
  for (const auto& f : findings) *a.add_findings() = f;
  std::string top = findings.empty() ? "unknown" : findings.front().failure_class();
  if (metrics_) metrics_->OnDiagnosis(top);
  AddEvent(ctx, d, "Warning", "Failed",
           absl::StrCat("attempt ", a.number(), " (", a.stack_id(), ") failed",
                        a.term_signal() != 0 ? absl::StrCat(", killed by signal ", a.term_signal())
                        : a.exit_code() ? absl::StrCat(" with exit code ", a.exit_code())
                                        : "",
                        ": ", top,
                        findings.empty() || findings.front().evidence().empty()
                            ? (a.message().empty() ? "" : absl::StrCat(" — ", a.message()))
                            : absl::StrCat(" — ", findings.front().evidence(0))));

  LaunchOutcomeRecord rec;
  rec.stack_id = a.stack_id();
  rec.node = a.placement().node();
  rec.arch = a.placement().arch();
  rec.model = d.spec().model();
  rec.tp = a.placement().tp();
  rec.ready = false;
  rec.failure_class = top;
  rec.message = findings.empty() || findings.front().evidence().empty() ? a.message()
                                                                       : findings.front().evidence(0);
  rec.instance_id = a.instance_id();
  rec.remediation = absl::StrJoin(a.remediations(), "; ");
  rec.duration_ms = ctx.now_ms - a.created_at_ms();
  rec.config_ok = a.config_remediation().empty();
  rec.carried_fix = a.instance().learned_fix().evidence_id();

  auto failover = [&](const std::string& why, const std::string& mark_broken = "stack_arch") {
    st->add_failed_stacks(a.stack_id());
    if (metrics_) metrics_->OnFailover(top);
    rec.scope = mark_broken == "none" ? "stack_arch_model" : mark_broken;
    st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
    st->set_next_attempt_at_ms(0);
    st->set_message(absl::StrCat("failing over from ", a.stack_id(), ": ", why));
    AddEvent(ctx, d, "Warning", "Failover",
             absl::StrCat(a.stack_id(), " cannot work on ", a.placement().arch(), " (", why,
                          "); recorded as broken evidence, trying the next plan now"));
  };
  auto retry_with_backoff = [&](const std::string& why) {
    int failures_on_plan = 0;
    for (const auto& x : st->attempts()) {
      // A superseded attempt (stopped for a re-adopted instance) did not fail.
      if (x.stack_id() == a.stack_id() && x.ended_at_ms() != 0 && x.ready_at_ms() == 0 &&
          x.phase() != dcufleet::v1::INSTANCE_STOPPED) {
        ++failures_on_plan;
      }
    }
    if (failures_on_plan >= d.spec().max_attempts_per_plan()) {
      failover(absl::StrCat(failures_on_plan, " failed attempts (last: ", why, ")"));
      // Spent retries count against the stack only when the class implicates
      // it: three port_in_use failures in 2 s (a port held by an unrelated
      // service) used to record the stack as broken for the model, forever.
      // A remediable class whose remediations are spent is the stack's.
      switch (modelkit::DefaultScopeOfFailureClass(top)) {
        case dcufleet::v1::SCOPE_NODE_STATE:
          rec.scope = "node_state";
          break;
        case dcufleet::v1::SCOPE_MODEL_CONFIG:
          rec.scope = "model_config";
          break;
        case dcufleet::v1::SCOPE_STACK_ARCH:
          rec.scope = "stack_arch";
          break;
        default:
          rec.scope = "stack_arch_model";
          break;
      }
      return;
    }
    absl::Duration b = Backoff(d, failures_on_plan);
    st->set_phase(dcufleet::v1::DEPLOYMENT_BACKOFF);
    st->set_next_attempt_at_ms(ctx.now_ms + absl::ToInt64Milliseconds(b));
    st->set_message(absl::StrCat("retrying ", a.stack_id(), " in ",
                                 common::HumanDuration(absl::ToInt64Milliseconds(b)), ": ", why));
    AddEvent(ctx, d, "Normal", "BackOff",
             absl::StrCat("retrying in ", common::HumanDuration(absl::ToInt64Milliseconds(b)),
                          " (failure ", failures_on_plan, " of ", d.spec().max_attempts_per_plan(),
                          " on this plan): ", why));
  };

  RemediationDecision decision =
      policy_.Decide(d, a, findings, FailureContext{placed_node, device_total});
  switch (decision.next) {
    case RemediationDecision::Next::kRetryNow:
      st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
      st->set_next_attempt_at_ms(0);
      st->set_message(absl::StrCat("retrying with remediation for ",
                                   decision.finding->failure_class(), ": ", decision.applied));
      rec.scope = "remediable";
      if (metrics_) metrics_->OnRemediation(decision.finding->failure_class());
      AddEvent(ctx, d, "Normal", "Remediated",
               absl::StrCat(decision.finding->failure_class(), " → ", decision.applied,
                            "; retrying now"));
      break;
    case RemediationDecision::Next::kFailover:
      failover(decision.why, decision.mark_broken);
      break;
    case RemediationDecision::Next::kHuman:
      st->set_phase(dcufleet::v1::DEPLOYMENT_FAILED);
      st->set_message(decision.message);
      AddEvent(ctx, d, "Warning", "NeedsHuman", st->message());
      break;
    case RemediationDecision::Next::kBackoff:
      retry_with_backoff(decision.why);
      break;
  }
  knowledge_->RecordOutcome(rec);
  ctx.plans.clear();
}

bool DeployController::Step(Deployment& d, StepContext& ctx) {
  const Transition t = Observe(d, ctx);
  if (t == Transition::kNone) return false;
  // False when the deployment stays unschedulable for the same reasons.
  if (t == Transition::kLaunch) return TryLaunch(d, ctx);
  if (t == Transition::kReconcileOrphan) {
    ReconcileOrphan(d, ctx);
    return true;
  }
  auto* st = d.mutable_status();
  Attempt& a = *ActiveAttempt(d);
  switch (t) {
    case Transition::kStopDeleted:
      a.set_ended_at_ms(ctx.now_ms);
      a.set_phase(dcufleet::v1::INSTANCE_STOPPED);
      ctx.Release(a.placement());
      ctx.touched.insert(a.placement().node());
      if (d.status().scaled_to_zero() && !d.status().deleted()) {
        d.mutable_status()->set_message(ScaledToZeroMessage(d));
        AddEvent(ctx, d, "Normal", "Stopped",
                 absl::StrCat("instance '", a.instance_id(), "' on node '", a.placement().node(),
                              "' stopped (scaled to zero)"));
      }
      return true;
    case Transition::kNodeLost:
      EndOnLostNode(d, a, ctx);
      break;
    case Transition::kReportOverdue:
      a.set_ended_at_ms(ctx.now_ms);
      a.set_phase(dcufleet::v1::INSTANCE_FAILED);
      a.set_message("the agent never reported the instance");
      HandleFailure(d, a, ctx);
      break;
    case Transition::kFollowReport: {
      const NodeView& node = *ctx.Node(a.placement().node());
      FollowReport(d, a, node, *FindInstance(node, a.instance_id()), ctx);
      break;
    }
    default:
      break;
  }
  if (AttemptActive(a)) return true;
  // The attempt ended: its devices are free, and when the next attempt may
  // start now (a failover or a remediation, no back-off) it starts in this
  // pass rather than the next one.
  ctx.Release(a.placement());
  if (d.spec().replicas() > 1) ctx.LeaveNode(d.spec().name(), a.placement().node());
  ctx.touched.insert(a.placement().node());
  if (st->phase() == dcufleet::v1::DEPLOYMENT_PENDING && st->next_attempt_at_ms() <= ctx.now_ms) {
    TryLaunch(d, ctx);
  }
  return true;
}

bool DeployController::AwaitModelCopy(Deployment& d, StepContext& ctx, const ScheduleResult& r) {
  auto* st = d.mutable_status();
  const std::string& target = r.placement.node();
  const NodeView* to = ctx.Node(target);
  std::string msg;
  // One request per copy: a running copy is waited for; a failed one the
  // scheduler passes over (PlanCopyBeforeLaunch), so it is not asked again.
  const dcufleet::v1::ModelTransfer* t = to ? FindTransfer(*to, r.copy.model_dir) : nullptr;
  // A copy that just finished: the node's next report lists the directory
  // (the agent rescans at once); asking again would only be refused.
  constexpr int64_t kDoneReportGraceMs = 30000;
  if (t && t->state() == dcufleet::v1::MODEL_TRANSFER_RUNNING) {
    // Bytes, rate and ETA as the node last reported them, so that deploy
    // --watch and describe show the copy moving.
    msg = absl::StrCat(target, ": ", common::DescribeModelTransfer(*t), " before the launch (", r.reason, ")");
  } else if (t && t->state() == dcufleet::v1::MODEL_TRANSFER_DONE &&
             ctx.now_ms - t->finished_at_ms() < kDoneReportGraceMs) {
    msg = absl::StrCat(target, ": copied ", r.copy.model_dir, "; launching once the node reports it");
  } else {
    dcufleet::v1::ControllerMessage cm;
    auto* cmd = cm.mutable_command();
    cmd->set_command_id(absl::StrCat("fetch-", r.copy.model_dir, "-", ctx.now_ms));
    *cmd->mutable_fetch_model() = r.copy.ToCommand();
    if (!fleet_->SendToNode(target, cm)) {
      msg = absl::StrCat(target, ": cannot ask it to copy ", r.copy.model_dir, " (not connected); retrying");
    } else {
      AddEvent(ctx, d, "Normal", "ModelCopyStarted",
               absl::StrCat(r.reason, ": node '", target, "' copies ", r.copy.model_dir, " from ",
                            r.copy.From(), " before the launch"));
      msg = absl::StrCat(target, ": copying ", r.copy.model_dir, " from ", r.copy.From(), " before the launch (",
                         r.reason, ")");
    }
  }
  // Waiting for the copy is not "nothing fits": Pending, so that deploy
  // --wait waits (Observe retries the launch every pass).
  bool changed = st->phase() != dcufleet::v1::DEPLOYMENT_PENDING || st->message() != msg;
  st->clear_rejections();
  for (const auto& rj : r.rejections) *st->add_rejections() = rj;
  st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
  st->set_message(msg);
  return changed;
}

}  // namespace dcu::controller
