// DeployController: admission — validation and defaults, creates committed
// in groups by the writer thread, dry runs, Delete and the readers.

#include <algorithm>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "common/deployment_rules.h"
#include "common/enum_names.h"
#include "common/ids.h"
#include "common/input_rules.h"
#include "common/logging.h"
#include "common/units.h"
#include "controller/core/deploy_step_context.h"
#include "google/protobuf/util/message_differencer.h"

namespace dcu::controller {

using dcufleet::v1::Attempt;
using dcufleet::v1::Deployment;
using dcufleet::v1::DeploymentSpec;
using dcufleet::v1::InstancePhase;
using dcufleet::v1::InstanceSpec;
using dcufleet::v1::InstanceStatus;
using dcufleet::v1::NodeView;
using deploy_internal::ActiveAttempt;
using deploy_internal::FindInstance;
using deploy_internal::HasActiveAttempt;

DeploymentSpec DeployController::WithDefaults(DeploymentSpec s) const {
  return common::ApplyDeploymentDefaults(std::move(s));
}

absl::StatusOr<dcufleet::v1::DeployResponse> DeployController::Deploy(const DeploymentSpec& in,
                                                                      bool dry_run) {
  absl::Notification done;
  absl::StatusOr<dcufleet::v1::DeployResponse> result;
  DeployAsync(in, dry_run, [&](absl::StatusOr<dcufleet::v1::DeployResponse> r) {
    result = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

void DeployController::DeployAsync(const DeploymentSpec& in, bool dry_run, DeployCallback done) {
  PendingCreate create;
  std::optional<absl::StatusOr<dcufleet::v1::DeployResponse>> answer =
      Admit(in, dry_run, &create.doc, &create.event);
  if (answer) {
    done(std::move(*answer));
    return;
  }
  create.done = std::move(done);
  {
    absl::MutexLock lock(&write_mu_);
    if (writer_running_) {
      creates_.push_back(std::move(create));
      return;
    }
  }
  std::vector<PendingCreate> one;
  one.push_back(std::move(create));
  CommitCreates(one);
}

void DeployController::CommitCreates(std::vector<PendingCreate>& batch) {
  // Durable before acknowledged: one transaction for every deployment that
  // arrived meanwhile (group commit), then memory, then the answers.
  std::vector<Deployment> docs;
  std::vector<Event> events;
  docs.reserve(batch.size());
  events.reserve(batch.size());
  for (const auto& c : batch) {
    docs.push_back(c.doc);
    events.push_back(c.event);
  }
  absl::Status s = store_->PutDeployments(docs);
  if (s.ok() && events_) {
    absl::Status es = events_->AppendEvents(events);
    if (!es.ok()) DCU_LOG_WARN("appending ", events.size(), " events: ", es.message());
  }
  {
    absl::MutexLock lock(&mu_);
    for (const auto& c : batch) {
      creating_.erase(c.doc.spec().name());
      if (s.ok()) deployments_[c.doc.spec().name()] = c.doc;
    }
    if (s.ok()) dirty_ = true;
  }
  for (auto& c : batch) {
    if (!s.ok()) {
      c.done(s);
      continue;
    }
    dcufleet::v1::DeployResponse resp;
    *resp.mutable_deployment() = std::move(c.doc);
    resp.set_created(true);
    c.done(std::move(resp));
  }
}

void DeployController::WriterLoop() {
  while (true) {
    std::vector<PendingCreate> batch;
    {
      absl::MutexLock lock(&write_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) {
        return writer_stop_ || !creates_.empty();
      };
      write_mu_.Await(absl::Condition(&ready));
      if (creates_.empty()) return;
      while (!creates_.empty()) {
        batch.push_back(std::move(creates_.front()));
        creates_.pop_front();
      }
    }
    CommitCreates(batch);
  }
}

std::optional<absl::StatusOr<dcufleet::v1::DeployResponse>> DeployController::Admit(
    const DeploymentSpec& in, bool dry_run, Deployment* create, Event* created) {
  // The same rules as the service edge (common/deployment_rules.h).
  DeploymentSpec spec = WithDefaults(in);
  if (absl::Status s = common::ValidateDeploymentSpec(spec); !s.ok()) return s;
  auto model = knowledge_->Model(spec.model());
  if (!model.ok()) return model.status();
  // What can be known now is said now (issue 16: `deploy --tp 3` said
  // "created" and exited 0 for a deployment no fleet could ever schedule).
  // A TP the model's heads do not divide is such a thing; free devices and
  // nodes are not (nodes join), so those stay Unschedulable, retried.
  if (spec.tp() > 0 && !model->valid_tp.empty() &&
      std::find(model->valid_tp.begin(), model->valid_tp.end(), spec.tp()) ==
          model->valid_tp.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        common::kNeverSchedulablePrefix, "TP ", spec.tp(), " does not divide ", spec.model(), "'s ",
        model->num_attention_heads, " attention heads and ", model->num_key_value_heads,
        " KV heads; the TP sizes it allows are ", absl::StrJoin(model->valid_tp, ", "),
        " (pass --tp with one of them, or leave --tp out to let the scheduler choose)"));
  }

  dcufleet::v1::DeployResponse resp;
  absl::Time now = clock_->Now();
  if (dry_run) {
    *resp.mutable_deployment() = DryRun(spec);
    return resp;
  }

  Deployment& d = *create;
  {
    absl::MutexLock lock(&mu_);
    auto it = deployments_.find(spec.name());
    if (it != deployments_.end()) {
      if (it->second.status().deleted()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "deployment '", spec.name(), "' is being deleted; wait until it is gone"));
      }
      if (google::protobuf::util::MessageDifferencer::Equals(it->second.spec(), spec)) {
        *resp.mutable_deployment() = it->second;
        resp.set_created(false);
        return resp;
      }
      return absl::AlreadyExistsError(absl::StrCat(
          "deployment '", spec.name(), "' exists with a different spec; delete it first or pick "
          "another --name"));
    }
    if (!creating_.insert(spec.name()).second) {
      return absl::UnavailableError(
          absl::StrCat("deployment '", spec.name(), "' is being created; try again"));
    }
    *d.mutable_spec() = spec;
    d.set_uid(common::NewId("d"));
    d.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
    d.mutable_status()->set_message("waiting to be scheduled");
    d.mutable_status()->set_created_at_ms(absl::ToUnixMillis(now));
    d.mutable_status()->set_updated_at_ms(absl::ToUnixMillis(now));
    d.set_revision(1);
  }
  *created = Event{0, absl::ToUnixMillis(now), "deployment", spec.name(), "Normal", "Created",
                   absl::StrCat("model ", spec.model(),
                                spec.tp() ? absl::StrCat(" TP=", spec.tp()) : " TP=auto",
                                " max_model_len=", spec.max_model_len())};
  return std::nullopt;
}

std::vector<Deployment> DeployController::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<Deployment> out;
  for (const auto& [n, d] : deployments_) out.push_back(d);
  return out;
}

absl::StatusOr<Deployment> DeployController::Get(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = deployments_.find(name);
  if (it == deployments_.end()) {
    return absl::NotFoundError(absl::StrCat("deployment '", name, "' not found"));
  }
  return it->second;
}

absl::StatusOr<Deployment> DeployController::Delete(const std::string& name) {
  Deployment d;
  {
    absl::MutexLock lock(&mu_);
    auto it = deployments_.find(name);
    if (it == deployments_.end()) {
      return absl::NotFoundError(absl::StrCat("deployment '", name, "' not found"));
    }
    d = it->second;
  }
  if (d.status().deleted()) return d;
  d.mutable_status()->set_deleted(true);
  d.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_DELETING);
  d.mutable_status()->set_message("stopping its instances");
  d.set_revision(d.revision() + 1);
  absl::Status s = store_->PutDeployment(d);
  if (!s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    deployments_[name] = d;
    // Its nodes' desired sets lose its instances in the next pass.
    for (const auto& a : d.status().attempts()) recompute_.insert(a.placement().node());
    dirty_ = true;
  }
  if (events_) {
    (void)events_->AppendEvent({0, absl::ToUnixMillis(clock_->Now()), "deployment", name,
                                "Normal", "Deleting", "stopping its instances"});
  }
  return d;
}

std::optional<Deployment> DeployController::WaitForChange(const std::string& name,
                                                          int64_t after_revision,
                                                          absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = deployments_.find(name);
    return it == deployments_.end() || it->second.revision() > after_revision || shutdown_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  auto it = deployments_.find(name);
  if (it == deployments_.end()) return std::nullopt;
  return it->second;
}

Deployment DeployController::DryRun(const DeploymentSpec& spec) {
  // The next launch of this spec, planned as TryLaunch plans it. A deployment
  // of the same name lends what it has learned (remediations, avoided
  // devices and ports, failed stacks), so the dry run shows exactly the spec
  // its next real launch would send.
  Deployment d;
  StepContext ctx;
  BuildContext(ctx);
  {
    absl::MutexLock lock(&mu_);
    auto it = deployments_.find(spec.name());
    if (it != deployments_.end() && !it->second.status().deleted()) {
      *d.mutable_status() = it->second.status();
      d.mutable_status()->clear_attempts();
    }
    // Others' attempts hold their devices; this deployment's own active
    // attempt does not: its next launch comes after that attempt ends.
    for (auto& [name, other] : deployments_) {
      if (name == spec.name()) continue;
      deploy_internal::ForEachAssignedAttempt(other, [&](const Attempt& a) { ctx.Take(a.placement()); });
    }
  }
  *d.mutable_spec() = spec;
  const int number = [&] {
    absl::MutexLock lock(&mu_);
    auto it = deployments_.find(spec.name());
    return it == deployments_.end() ? 1 : it->second.status().attempts_size() + 1;
  }();
  LaunchPlan plan = planner_.Plan(d, MakeScheduleInput(d, ctx),
                                  [&ctx](const std::string& n) { return ctx.Node(n); });
  const ScheduleResult& r = plan.schedule;
  auto* st = d.mutable_status();
  st->clear_plans();
  st->clear_excluded_plans();
  st->clear_rejections();
  st->clear_findings();
  for (const auto& p : r.plans) *st->add_plans() = p;
  for (const auto& p : r.excluded_plans) *st->add_excluded_plans() = p;
  for (const auto& rj : r.rejections) *st->add_rejections() = rj;
  if (!r.placed) {
    st->set_phase(dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
    st->set_message("dry run: nothing in the fleet fits");
    return d;
  }
  Attempt* a = st->add_attempts();
  a->set_number(number);
  a->set_stack_id(r.plan.stack_id());
  a->set_runtime_kind(r.plan.runtime_kind());
  *a->mutable_placement() = r.placement;
  for (const auto& f : plan.preparation.findings) *st->add_findings() = f;
  a->set_config_remediation(plan.preparation.remediation);
  if (plan.outcome != LaunchPlan::Outcome::kPlanned) {
    st->set_phase(dcufleet::v1::DEPLOYMENT_FAILED);
    st->set_message(absl::StrCat("dry run: ", plan.error));
    return d;
  }
  plan.instance.set_attempt(number);
  *a->mutable_instance() = std::move(plan.instance);
  st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
  st->set_message(absl::StrCat("dry run: would launch ", r.plan.stack_id(), " on node '",
                               r.placement.node(), "' devices [",
                               absl::StrJoin(r.placement.device_indices(), ","), "] TP=",
                               r.placement.tp()));
  return d;
}

}  // namespace dcu::controller
