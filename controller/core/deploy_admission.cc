// DeployController: admission — validation and defaults, creates committed
// in groups by the writer thread, dry runs, Delete and the readers.

#include <algorithm>
#include <iterator>
#include <set>
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
#include "controller/core/replica_set.h"
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
  PendingWrite create;
  DeployWrite write = DeployWrite::kCreate;
  DeploymentSpec spec;
  std::optional<absl::StatusOr<dcufleet::v1::DeployResponse>> answer =
      Admit(in, dry_run, &write, &spec, &create.docs, &create.event);
  if (answer) {
    done(std::move(*answer));
    return;
  }
  if (write != DeployWrite::kCreate) {
    PendingWrite change;
    change.run = [this, write, spec = std::move(spec), done = std::move(done)]() {
      done(ApplyToExisting(write, spec));
    };
    QueueWrite(std::move(change));
    return;
  }
  create.create = true;
  create.name = create.docs.front().spec().name();  // after the defaults
  create.done = [done = std::move(done)](absl::StatusOr<Deployment> shown) {
    if (!shown.ok()) {
      done(shown.status());
      return;
    }
    dcufleet::v1::DeployResponse resp;
    *resp.mutable_deployment() = *std::move(shown);
    resp.set_created(true);
    done(std::move(resp));
  };
  QueueWrite(std::move(create));
}

void DeployController::QueueWrite(PendingWrite write) {
  {
    absl::MutexLock lock(&write_mu_);
    if (writer_running_) {
      writes_.push_back(std::move(write));
      return;
    }
  }
  std::vector<PendingWrite> one;
  one.push_back(std::move(write));
  ProcessWrites(one);
}

void DeployController::ProcessWrites(std::vector<PendingWrite>& batch) {
  std::vector<PendingWrite> group;
  for (auto& w : batch) {
    if (!w.run) {
      group.push_back(std::move(w));
      continue;
    }
    if (!group.empty()) CommitWrites(group);
    group.clear();
    w.run();
  }
  if (!group.empty()) CommitWrites(group);
}

void DeployController::ScaleAsync(const std::string& name, int replicas, ScaleCallback done) {
  PendingWrite change;
  change.run = [this, name, replicas, done = std::move(done)]() { done(Scale(name, replicas)); };
  QueueWrite(std::move(change));
}

absl::StatusOr<dcufleet::v1::DeployResponse> DeployController::ApplyToExisting(
    DeployWrite write, const DeploymentSpec& spec) {
  dcufleet::v1::DeployResponse resp;
  resp.set_created(false);
  if (write == DeployWrite::kScale) {
    auto scaled = Scale(spec.name(), spec.replicas());
    if (!scaled.ok()) return scaled.status();
    *resp.mutable_deployment() = std::move(*scaled->mutable_deployment());
    resp.set_change(absl::StrCat("scaled to ", spec.replicas(),
                                 spec.replicas() == 1 ? " replica" : " replicas"));
    return resp;
  }
  if (spec.replicas() == 0) {
    // To zero with another spec: stopped first, so that nothing rolls; the
    // kept document then takes the spec.
    auto scaled = Scale(spec.name(), 0);
    if (!scaled.ok()) return scaled.status();
  }
  std::string changes;
  auto rolled = StartRollout(spec, &changes);
  if (!rolled.ok()) return rolled.status();
  const bool at_zero = rolled->status().phase() == dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO;
  *resp.mutable_deployment() = *std::move(rolled);
  resp.set_change(absl::StrCat(at_zero ? "taken at zero, nothing runs to roll: " : "rolling out: ", changes));
  return resp;
}

void DeployController::CommitWrites(std::vector<PendingWrite>& batch) {
  // Durable before acknowledged: one transaction for every create and
  // delete that arrived meanwhile (group commit), then memory, then the
  // answers. Under doc_write_mu_ from the copies on: nothing changes the
  // documents between a delete's copy and its write, and no pass writes an
  // older version after it. The answers go out after it is released.
  absl::Status s;
  std::vector<ReplicaDocs> answers(batch.size());
  {
    absl::MutexLock order(&doc_write_mu_);
    {
      absl::MutexLock lock(&mu_);
      std::set<std::string> deleting;
      for (auto& w : batch) {
        // A second delete of the same deployment in this batch marks nothing
        // and is answered with the first's result.
        if (w.create || !deleting.insert(w.name).second) continue;
        for (const Deployment* r : ReplicasOf(w.name)) {
          if (r->status().deleted()) continue;
          w.docs.push_back(RemovedReplica(*r, "stopping its instances", w.event.at_ms));
        }
      }
    }
    // Every write's documents moved into one vector for the transaction;
    // [first[i], first[i + 1]) are batch[i]'s.
    std::vector<Deployment> docs;
    std::vector<Event> events;
    std::vector<size_t> first;
    docs.reserve(batch.size());
    events.reserve(batch.size());
    first.reserve(batch.size() + 1);
    for (auto& w : batch) {
      first.push_back(docs.size());
      if (w.docs.empty()) continue;
      std::move(w.docs.begin(), w.docs.end(), std::back_inserter(docs));
      w.docs.clear();
      events.push_back(w.event);
    }
    first.push_back(docs.size());
    s = docs.empty() ? absl::OkStatus() : store_->PutDeployments(docs);
    if (s.ok() && events_ && !events.empty()) {
      absl::Status es = events_->AppendEvents(events);
      if (!es.ok()) DCU_LOG_WARN("appending ", events.size(), " events: ", es.message());
    }
    {
      absl::MutexLock lock(&mu_);
      for (size_t i = 0; i < batch.size(); ++i) {
        PendingWrite& w = batch[i];
        if (w.create) creating_.erase(w.name);
        if (!s.ok()) continue;
        for (size_t j = first[i]; j < first[i + 1]; ++j) TakeInWritten(std::move(docs[j]));
        if (first[i + 1] > first[i]) NoteChange(w.name);
        // Taken now: the pass this wakes may forget a deleted deployment with
        // nothing running at once, and the caller must still get what it
        // deleted.
        answers[i] = ReplicaDocsOf(w.name);
      }
      if (s.ok() && !docs.empty()) dirty_ = true;
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& w = batch[i];
    if (!s.ok()) {
      w.done(s);
    } else if (std::optional<Deployment> answer = Aggregate(answers[i])) {
      w.done(*std::move(answer));
    } else {
      // Deleted and forgotten between the call and this commit.
      w.done(absl::NotFoundError(absl::StrCat("deployment '", w.name, "' not found")));
    }
  }
}

void DeployController::WriterLoop() {
  while (true) {
    std::vector<PendingWrite> batch;
    {
      absl::MutexLock lock(&write_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) {
        return writer_stop_ || !writes_.empty();
      };
      write_mu_.Await(absl::Condition(&ready));
      if (writes_.empty()) return;
      while (!writes_.empty()) {
        batch.push_back(std::move(writes_.front()));
        writes_.pop_front();
      }
    }
    ProcessWrites(batch);
  }
}

std::optional<absl::StatusOr<dcufleet::v1::DeployResponse>> DeployController::Admit(
    const DeploymentSpec& in, bool dry_run, DeployWrite* write, DeploymentSpec* spec_out,
    std::vector<Deployment>* create, Event* created) {
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

  bool scale_instead = false, roll_instead = false;
  {
    absl::MutexLock lock(&mu_);
    std::optional<Deployment> existing = AggregateOf(spec.name());
    if (existing) {
      if (existing->status().deleted()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "deployment '", spec.name(), "' is being deleted; wait until it is gone"));
      }
      // A restart is asked for by a new restarted_at_ms (rollout restart);
      // a spec that leaves it out keeps the one the deployment has, or
      // re-running the deploy that made it would restart it.
      if (spec.restarted_at_ms() == 0) spec.set_restarted_at_ms(existing->spec().restarted_at_ms());
      if (google::protobuf::util::MessageDifferencer::Equals(existing->spec(), spec)) {
        *resp.mutable_deployment() = std::move(*existing);
        resp.set_created(false);
        return resp;
      }
      // Another --replicas alone is a scale, as in `kubectl apply`; any
      // other change rolls the replicas onto the new spec, one at a time.
      if (SameSpecButReplicas(existing->spec(), spec)) {
        scale_instead = true;
      } else {
        roll_instead = true;
      }
    } else if (!creating_.insert(spec.name()).second) {
      return absl::UnavailableError(
          absl::StrCat("deployment '", spec.name(), "' is being created; try again"));
    }
  }
  if (scale_instead || roll_instead) {
    *write = scale_instead ? DeployWrite::kScale : DeployWrite::kRoll;
    *spec_out = std::move(spec);
    return std::nullopt;
  }
  *write = DeployWrite::kCreate;
  const std::string uid = common::NewId("d");
  // Created at zero replicas (`apply -f` of a deployment scaled to zero):
  // one document holds the spec, with nothing to place.
  for (int r = 0; r < std::max(1, spec.replicas()); ++r) {
    Deployment& d = create->emplace_back();
    *d.mutable_spec() = spec;
    d.set_uid(uid);
    d.set_uid_created_at_ms(absl::ToUnixMillis(now));
    d.set_replica(r);
    d.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
    d.mutable_status()->set_message("waiting to be scheduled");
    d.mutable_status()->set_created_at_ms(absl::ToUnixMillis(now));
    d.mutable_status()->set_updated_at_ms(absl::ToUnixMillis(now));
    if (spec.replicas() == 0) d = ParkedReplica(d, absl::ToUnixMillis(now));
    d.set_revision(1);
  }
  *created = Event{0, absl::ToUnixMillis(now), "deployment", spec.name(), "Normal", "Created",
                   CreationSummary(spec)};
  return std::nullopt;
}

std::vector<const Deployment*> DeployController::ReplicasOf(const std::string& name) const {
  std::vector<const Deployment*> out;
  for (auto it = deployments_.lower_bound(name);
       it != deployments_.end() && IsReplicaKeyOf(it->first, name); ++it) {
    out.push_back(it->second.get());
  }
  return out;
}

std::optional<Deployment> DeployController::AggregateOf(const std::string& name) const {
  std::vector<const Deployment*> replicas = ReplicasOf(name);
  if (replicas.empty()) return std::nullopt;
  return AggregateReplicas(replicas, RevisionOf(name));
}

DeployController::ReplicaDocs DeployController::ReplicaDocsOf(const std::string& name) const {
  ReplicaDocs out;
  for (auto it = deployments_.lower_bound(name);
       it != deployments_.end() && IsReplicaKeyOf(it->first, name); ++it) {
    out.docs.push_back(it->second);
  }
  out.revision = RevisionOf(name);
  return out;
}

std::optional<Deployment> DeployController::Aggregate(const ReplicaDocs& replicas) {
  if (replicas.docs.empty()) return std::nullopt;
  std::vector<const Deployment*> pointers;
  pointers.reserve(replicas.docs.size());
  for (const auto& d : replicas.docs) pointers.push_back(d.get());
  return AggregateReplicas(pointers, replicas.revision);
}

std::vector<Deployment> DeployController::List() const {
  // The (immutable) documents' pointers and the revisions under mu_, the
  // copies outside it: copying 20,000 documents held mu_ for ~300 ms, and
  // admission, the writer and the pass waited behind every listing
  // (BENCHMARKS.md, "A listing no longer holds the controller").
  std::vector<DocPtr> docs;
  std::vector<std::pair<size_t, int64_t>> groups;  // a deployment's first doc, its revision
  {
    absl::MutexLock lock(&mu_);
    docs.reserve(deployments_.size());
    // Replicas of one name are contiguous in key order (replica_set.h).
    for (auto it = deployments_.begin(); it != deployments_.end();) {
      const std::string& name = it->second->spec().name();
      groups.emplace_back(docs.size(), RevisionOf(name));
      for (; it != deployments_.end() && IsReplicaKeyOf(it->first, name); ++it) {
        docs.push_back(it->second);
      }
    }
  }
  std::vector<Deployment> out;
  out.reserve(groups.size());
  std::vector<const Deployment*> replicas;
  for (size_t g = 0; g < groups.size(); ++g) {
    const size_t end = g + 1 < groups.size() ? groups[g + 1].first : docs.size();
    replicas.clear();
    for (size_t i = groups[g].first; i < end; ++i) replicas.push_back(docs[i].get());
    out.push_back(AggregateReplicas(replicas, groups[g].second));
  }
  return out;
}

absl::StatusOr<Deployment> DeployController::Get(const std::string& name) const {
  ReplicaDocs replicas;
  {
    absl::MutexLock lock(&mu_);
    replicas = ReplicaDocsOf(name);
  }
  std::optional<Deployment> d = Aggregate(replicas);
  if (!d) return absl::NotFoundError(absl::StrCat("deployment '", name, "' not found"));
  return *std::move(d);
}

absl::StatusOr<DeployController::FoundAttempt> DeployController::FindAttempt(
    const std::string& name, const AttemptSelector& which) const {
  if (!which.instance_id.empty() && (which.replica || which.previous)) {
    return absl::InvalidArgumentError(
        "an instance id names one attempt: give it alone, or choose by replica and --previous");
  }
  absl::MutexLock lock(&mu_);
  std::vector<const Deployment*> replicas = ReplicasOf(name);
  if (replicas.empty()) return absl::NotFoundError(absl::StrCat("deployment '", name, "' not found"));
  if (!which.instance_id.empty()) {
    for (const Deployment* r : replicas) {
      for (const auto& a : r->status().attempts()) {
        if (a.instance_id() == which.instance_id) return FoundAttempt{a, ""};
      }
    }
    return absl::NotFoundError(
        absl::StrCat("instance '", which.instance_id, "' not found in deployment '", name, "'"));
  }
  // The replica asked for, else the one a reader is shown (replica_set.h).
  const Deployment* chosen = nullptr;
  if (which.replica) {
    std::vector<int> indices;
    for (const Deployment* r : replicas) {
      indices.push_back(r->replica());
      if (r->replica() == *which.replica) chosen = r;
    }
    if (chosen == nullptr) {
      return absl::NotFoundError(absl::StrCat("deployment '", name, "' has no replica ",
                                              *which.replica, " (its replicas: ",
                                              absl::StrJoin(indices, ", "), ")"));
    }
  } else {
    // No copy of the documents: only which replica speaks.
    chosen = SpeakingReplicaOf(replicas).shown;
  }
  const auto& attempts = chosen->status().attempts();
  const std::string who = absl::StrCat(which.replica || replicas.size() > 1
                                           ? absl::StrCat("replica ", chosen->replica(), " of ")
                                           : "",
                                       "deployment '", name, "'");
  if (attempts.empty()) {
    if (which.previous) return absl::NotFoundError(absl::StrCat(who, " has not launched yet"));
    const std::string& status = chosen->status().message();
    return FoundAttempt{std::nullopt, absl::StrCat(who, " has not launched yet",
                                                   status.empty() ? "" : ": ", status)};
  }
  if (which.previous) {
    if (attempts.size() < 2) {
      return absl::NotFoundError(absl::StrCat(who, " has had one attempt (", attempts[0].instance_id(),
                                              "): there is no previous instance"));
    }
    return FoundAttempt{attempts[attempts.size() - 2], ""};
  }
  FoundAttempt found{attempts[attempts.size() - 1], ""};
  if (ScaledToZero(*chosen)) {
    found.scaled_to_zero = absl::StrCat(
        "deployment '", name, "' is scaled to zero: its last instance '",
        attempts[attempts.size() - 1].instance_id(),
        "' was stopped and its log went with it; 'dcuctl scale deployment ", name,
        " --replicas 1' starts one again");
  }
  return found;
}

absl::StatusOr<Deployment> DeployController::Delete(const std::string& name) {
  absl::Notification done;
  absl::StatusOr<Deployment> result;
  DeleteAsync(name, [&](absl::StatusOr<Deployment> r) {
    result = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

void DeployController::DeleteAsync(const std::string& name, DeleteCallback done) {
  // What needs no write is answered now; the marked copies are taken by the
  // writer (CommitWrites), from the documents as they are then.
  std::optional<Deployment> shown;  // only when answered now: a copy of every replica
  bool found = false;
  {
    absl::MutexLock lock(&mu_);
    std::vector<const Deployment*> replicas = ReplicasOf(name);
    found = !replicas.empty();
    bool all_deleted = true;
    for (const Deployment* r : replicas) all_deleted = all_deleted && r->status().deleted();
    if (found && all_deleted) shown = AggregateOf(name);
  }
  if (!found) {
    done(absl::NotFoundError(absl::StrCat("deployment '", name, "' not found")));
    return;
  }
  if (shown) {
    done(*std::move(shown));
    return;
  }
  PendingWrite del;
  del.name = name;
  del.event = Event{0, absl::ToUnixMillis(clock_->Now()), "deployment", name, "Normal", "Deleting",
                    "stopping its instances"};
  del.done = std::move(done);
  QueueWrite(std::move(del));
}

absl::StatusOr<dcufleet::v1::ScaleDeploymentResponse> DeployController::Scale(
    const std::string& name, int replicas) {
  const common::DeploymentNumberRule* rule = common::FindDeploymentNumberRule("replicas");
  if (rule) {
    // 0 is a value of its own here (scale to zero), not the default.
    if (absl::Status s = common::CheckDeploymentNumber(*rule, replicas, "replicas");
        !s.ok() || replicas < 0) {
      return s.ok() ? absl::InvalidArgumentError("replicas: must be at least 0") : s;
    }
  }
  const int64_t now_ms = absl::ToUnixMillis(clock_->Now());
  std::vector<Deployment> docs;
  dcufleet::v1::ScaleDeploymentResponse resp;
  int before = 0;
  {
    // From the copies to memory (doc_write_mu_): no pass writes an older
    // version of a replica over this one.
    absl::MutexLock order(&doc_write_mu_);
    {
      absl::MutexLock lock(&mu_);
      std::vector<const Deployment*> current = ReplicasOf(name);
      if (current.empty()) {
        return absl::NotFoundError(absl::StrCat("deployment '", name, "' not found"));
      }
      const Deployment* live = nullptr;
      const Deployment* parked = nullptr;
      for (const Deployment* r : current) {
        if (!r->status().deleted()) {
          live = r;
          ++before;
        }
        if (ScaledToZero(*r)) parked = r;
      }
      if (!live) {
        return absl::FailedPreconditionError(
            absl::StrCat("deployment '", name, "' is being deleted; wait until it is gone"));
      }
      if (parked) before = 0;
      resp.set_previous_replicas(before);
      if (parked && replicas > 0 && deploy_internal::HasActiveAttempt(*parked)) {
        const Attempt& a = parked->status().attempts(parked->status().attempts_size() - 1);
        return absl::FailedPreconditionError(absl::StrCat(
            "deployment '", name, "' is still stopping instance '", a.instance_id(), "' on node '",
            a.placement().node(), "' (scaled to zero); scale it up once that has stopped "
            "(dcuctl scale deployment ", name, " --replicas 0 --wait waits for it)"));
      }
      // To zero, one document stays (the best placed: it holds the spec);
      // from zero, that document is replaced by a placed replica.
      std::vector<int> remove = ReplicasToRemove(current, std::max(1, replicas));
      std::vector<int> add = ReplicasToAdd(current, std::max(1, replicas));
      // Every live replica carries the new count; the removed ones are
      // marked as every removal is (RemovedReplica), the added ones made as
      // every addition is (AddedReplica), on the live ones' target spec.
      auto with_count = [replicas](Deployment d) {
        d.mutable_spec()->set_replicas(replicas);
        if (d.has_target_spec()) d.mutable_target_spec()->set_replicas(replicas);
        return d;
      };
      for (const Deployment* r : current) {
        if (r->status().deleted()) continue;
        if (std::find(remove.begin(), remove.end(), r->replica()) != remove.end()) {
          resp.add_removed(r->replica());
          docs.push_back(RemovedReplica(
              with_count(*r),
              replicas == 0 ? std::string("removed by the scale to zero")
                            : absl::StrCat("removed by the scale-down to ", replicas, " replicas"),
              now_ms));
          continue;
        }
        if (replicas == 0) {
          if (!parked) docs.push_back(ParkedReplica(*r, now_ms));
          continue;
        }
        if (r == parked) {
          // Placed afresh, as an added replica (its stopped attempts stay
          // in the deployment's events, not in the new document).
          Deployment d = AddedReplica(with_count(*r), TargetSpec(*r), r->replica(),
                                      "waiting to be scheduled", now_ms);
          d.set_revision(r->revision() + 1);
          resp.add_added(r->replica());
          docs.push_back(std::move(d));
          continue;
        }
        if (r->spec().replicas() == replicas) continue;
        Deployment d = with_count(*r);
        d.set_revision(d.revision() + 1);
        d.mutable_status()->set_updated_at_ms(now_ms);
        docs.push_back(std::move(d));
      }
      if (!add.empty()) {
        const Deployment like = with_count(*live);
        for (int index : add) {
          // Added during a rollout, a replica starts on the new spec.
          resp.add_added(index);
          docs.push_back(
              AddedReplica(like, TargetSpec(like), index, "waiting to be scheduled", now_ms));
        }
      }
    }
    if (!docs.empty()) {
      absl::Status s = store_->PutDeployments(docs);
      if (!s.ok()) return s;
      absl::MutexLock lock(&mu_);
      for (auto& d : docs) TakeInWritten(std::move(d));
      NoteChange(name);
      dirty_ = true;
    }
    // Logged before the order of document writes is let go: a pass that
    // places an added replica stores it under that order, so its events
    // come after this one.
    if (events_ && before != replicas) {
      auto named = [](const auto& indices) {
        return absl::StrCat(indices.size() == 1 ? "replica " : "replicas ",
                            absl::StrJoin(indices, ", "));
      };
      (void)events_->AppendEvent(
          {0, now_ms, "deployment", name, "Normal", "Scaled",
           absl::StrCat("replicas ", before, " -> ", replicas,
                        resp.added().empty() ? "" : absl::StrCat("; adding ", named(resp.added())),
                        resp.removed().empty()
                            ? ""
                            : absl::StrCat("; removing ", named(resp.removed()),
                                           " (worst placed first: not Ready, then the most "
                                           "crowded node)"),
                        replicas == 0 ? "; the deployment stays, with no instance (scale it up "
                                        "to serve again)"
                                      : "")});
    }
  }
  auto d = Get(name);
  if (!d.ok()) return d.status();
  *resp.mutable_deployment() = *std::move(d);
  return resp;
}

absl::StatusOr<Deployment> DeployController::StartRollout(const DeploymentSpec& spec,
                                                          std::string* changes_out) {
  const std::string& name = spec.name();
  const int64_t now_ms = absl::ToUnixMillis(clock_->Now());
  std::vector<Deployment> docs;
  std::string changes;
  std::optional<Deployment> answer;
  // Scaled to zero: the spec is taken at once, and replicas the spec asks
  // for are added after it.
  bool parked = false;
  int scale_after = 0;
  {
    // From the copies to memory, as Scale.
    absl::MutexLock order(&doc_write_mu_);
    {
      absl::MutexLock lock(&mu_);
      for (const Deployment* r : ReplicasOf(name)) {
        if (r->status().deleted()) continue;
        if (changes.empty()) changes = SpecChanges(TargetSpec(*r), spec);
        Deployment d = *r;
        StartRevision(&d, spec, now_ms, changes.empty() ? "spec changed" : changes);
        if (ScaledToZero(d)) {
          // Nothing runs, so nothing rolls: the kept document takes the
          // spec, and a scale up (below, when the spec asks for replicas)
          // places it.
          *d.mutable_spec() = spec;
          d.mutable_spec()->set_replicas(0);
          d.clear_target_spec();
          parked = true;
          scale_after = spec.replicas();
        } else {
          *d.mutable_target_spec() = spec;
          d.mutable_spec()->set_replicas(spec.replicas());
        }
        d.set_revision(d.revision() + 1);
        d.mutable_status()->set_updated_at_ms(now_ms);
        docs.push_back(std::move(d));
      }
      if (docs.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("deployment '", name, "' is being deleted; wait until it is gone"));
      }
    }
    // Intent first, as everywhere: the rollout survives a controller restart
    // because every live replica carries its target.
    absl::Status s = store_->PutDeployments(docs);
    if (!s.ok()) return s;
    {
      absl::MutexLock lock(&mu_);
      for (auto& d : docs) TakeInWritten(std::move(d));
      if (!parked) rolling_.insert(name);
      NoteChange(name);
      dirty_ = true;
      answer = AggregateOf(name);
    }
    // Before the order is let go, as Scale's: the rollout's first step
    // comes from a pass, after this.
    if (events_) {
      (void)events_->AppendEvent(
          {0, now_ms, "deployment", name, "Normal", parked ? "SpecChanged" : "RolloutStarted",
           absl::StrCat(changes.empty() ? "spec changed" : changes,
                        parked ? "; scaled to zero, so nothing is replaced: replicas added from "
                                 "now on run it"
                               : "; replicas are replaced one at a time (a new one first while "
                                 "devices allow, so none stops serving before its replacement "
                                 "is Ready)")});
    }
  }
  if (parked && scale_after > 0) {
    auto scaled = Scale(name, scale_after);
    if (!scaled.ok()) return scaled.status();
    answer = std::move(*scaled->mutable_deployment());
  }
  if (!answer) return absl::NotFoundError(absl::StrCat("deployment '", name, "' not found"));
  *changes_out = std::move(changes);
  return *std::move(answer);
}

void DeployController::AdvanceRollouts(std::vector<Event>* events) {
  const size_t first_event = events->size();
  const int64_t now_ms = absl::ToUnixMillis(clock_->Now());
  std::vector<Deployment> docs;
  std::vector<std::string> names;
  absl::MutexLock order(&doc_write_mu_);
  {
    absl::MutexLock lock(&mu_);
    for (auto it = rolling_.begin(); it != rolling_.end();) {
      const std::string& name = *it;
      std::vector<const Deployment*> replicas = ReplicasOf(name);
      const Deployment* live = nullptr;
      bool behind = false;
      int live_count = 0;
      for (const Deployment* r : replicas) {
        if (r->status().deleted()) continue;
        live = r;
        ++live_count;
        if (!OnTargetSpec(*r)) behind = true;
      }
      // Scaled to zero: its one document took the target spec (ParkedReplica).
      if (live && ScaledToZero(*live)) {
        it = rolling_.erase(it);
        continue;
      }
      bool leaving = std::any_of(replicas.begin(), replicas.end(),
                                 [](const Deployment* r) { return r->status().deleted(); });
      if (!live || (!behind && !leaving && live_count >= std::max(1, live->spec().replicas()))) {
        if (live) {
          events->push_back(Event{0, now_ms, "deployment", name, "Normal", "RolloutComplete",
                                  absl::StrCat("every replica runs the new spec")});
        }
        it = rolling_.erase(it);
        continue;
      }
      RolloutStep step = NextRolloutStep(replicas, live->target_spec());
      if (step.remove >= 0) {
        for (const Deployment* r : replicas) {
          if (r->replica() != step.remove) continue;
          docs.push_back(RemovedReplica(*r, "replaced by the rollout to the new spec", now_ms));
        }
      }
      if (step.add >= 0) {
        docs.push_back(AddedReplica(*live, live->target_spec(), step.add,
                                    "waiting to be scheduled (rollout)", now_ms));
      }
      if (!step.why.empty()) {
        names.push_back(name);
        events->push_back(Event{0, now_ms, "deployment", name, "Normal", "RolloutStep", step.why});
      }
      ++it;
    }
  }
  CommitReplicaSteps(std::move(docs), names, "the rollout", events, first_event);
}

Deployment DeployController::RemovedReplica(const Deployment& r, const std::string& why,
                                            int64_t now_ms) {
  Deployment d = r;
  d.mutable_status()->set_deleted(true);
  d.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_DELETING);
  d.mutable_status()->set_message(why);
  d.set_revision(d.revision() + 1);
  d.mutable_status()->set_updated_at_ms(now_ms);
  return d;
}

Deployment DeployController::AddedReplica(const Deployment& like, const DeploymentSpec& spec,
                                          int index, const std::string& why, int64_t now_ms) {
  Deployment d;
  *d.mutable_spec() = spec;
  d.mutable_spec()->set_replicas(like.spec().replicas());
  if (like.has_target_spec()) *d.mutable_target_spec() = like.target_spec();
  if (like.has_previous_spec()) *d.mutable_previous_spec() = like.previous_spec();
  if (like.has_current_revision()) *d.mutable_current_revision() = like.current_revision();
  *d.mutable_revision_history() = like.revision_history();
  d.set_uid(like.uid());
  d.set_uid_created_at_ms(BornAtMs(like));
  d.set_replica(index);
  d.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
  d.mutable_status()->set_message(why);
  d.mutable_status()->set_created_at_ms(now_ms);
  d.mutable_status()->set_updated_at_ms(now_ms);
  d.set_revision(1);
  return d;
}

void DeployController::AdvanceEvacuations(std::vector<Event>* events) {
  const size_t first_event = events->size();
  const std::vector<std::string> listed = fleet_->DrainingNodes();
  const std::set<std::string> draining(listed.begin(), listed.end());
  const int64_t now_ms = absl::ToUnixMillis(clock_->Now());
  std::vector<Deployment> docs;
  std::vector<std::string> names;
  absl::MutexLock order(&doc_write_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (draining.empty() && evacuating_.empty()) return;
    if (!draining.empty()) {
      for (const auto& [key, d] : deployments_) {
        const Attempt* a = deploy_internal::LatestActive(*d);
        if (a && draining.count(a->placement().node())) evacuating_.insert(d->spec().name());
      }
    }
    for (auto it = evacuating_.begin(); it != evacuating_.end();) {
      const std::string& name = *it;
      // A rollout replaces replicas already (and places none on a draining
      // node); one change at a time.
      if (rolling_.count(name)) {
        ++it;
        continue;
      }
      std::vector<const Deployment*> replicas = ReplicasOf(name);
      EvacuationStep step = NextEvacuationStep(replicas, draining, now_ms, options_.serving_drain);
      if (step.done) {
        it = evacuating_.erase(it);
        continue;
      }
      for (const Deployment* r : replicas) {
        if (r->replica() == step.remove) docs.push_back(RemovedReplica(*r, step.why, now_ms));
        if (r->replica() == step.unserve) {
          Deployment d = *r;
          d.mutable_status()->set_unserved_at_ms(now_ms);
          d.mutable_status()->set_message(step.why);
          d.set_revision(d.revision() + 1);
          d.mutable_status()->set_updated_at_ms(now_ms);
          docs.push_back(std::move(d));
        }
      }
      if (step.add >= 0) {
        const Deployment* like = replicas.front();
        docs.push_back(AddedReplica(*like, like->spec(), step.add,
                                    "waiting to be scheduled (replacing a replica on a draining node)",
                                    now_ms));
      }
      if (!step.why.empty()) {
        names.push_back(name);
        events->push_back(Event{0, now_ms, "deployment", name, "Normal", "ReplicaMoved", step.why});
      }
      ++it;
    }
  }
  CommitReplicaSteps(std::move(docs), names, "moving replicas off draining nodes", events,
                     first_event);
}

void DeployController::CommitReplicaSteps(std::vector<Deployment> docs,
                                          const std::vector<std::string>& names,
                                          const std::string& what, std::vector<Event>* events,
                                          size_t first_event) {
  if (docs.empty()) return;
  if (absl::Status s = store_->PutDeployments(docs); !s.ok()) {
    DCU_LOG_ERROR("persisting ", what, " (", docs.size(), " replicas): ", s.message(),
                  "; will retry");
    events->resize(first_event);
    absl::MutexLock lock(&mu_);
    dirty_ = true;
    return;
  }
  absl::MutexLock lock(&mu_);
  for (auto& d : docs) TakeInWritten(std::move(d));
  // Announced with the pass's events (AnnounceChanges).
  for (const auto& n : names) announce_after_events_.push_back(n);
  dirty_ = true;
}

int64_t DeployController::WaitForAnyChange(int64_t after, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  // Not woken by shutdown: the timeout bounds the wait, and a caller that
  // loops on it must not spin once the controller stops.
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return changes_ > after; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return changes_;
}

std::optional<Deployment> DeployController::WaitForChange(const std::string& name,
                                                          int64_t after_revision,
                                                          absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = revisions_.find(name);
    return it == revisions_.end() || it->second > after_revision || shutdown_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return AggregateOf(name);
}

Deployment DeployController::DryRun(const DeploymentSpec& spec) {
  // The next launch of this spec, planned as TryLaunch plans it. A deployment
  // of the same name lends what it has learned (remediations, avoided
  // devices and ports, failed stacks), so the dry run shows exactly the spec
  // its next real launch would send.
  Deployment d;
  StepContext ctx;
  BuildContext(ctx);
  BuildSchedule(ctx);
  {
    absl::MutexLock lock(&mu_);
    auto it = deployments_.find(spec.name());
    if (it != deployments_.end() && !it->second->status().deleted()) {
      *d.mutable_status() = it->second->status();
      d.mutable_status()->clear_attempts();
      // A launch is what is planned, scaled to zero or not.
      d.mutable_status()->set_scaled_to_zero(false);
    }
    // Others' attempts hold their devices; this deployment's own active
    // attempt does not: its next launch comes after that attempt ends.
    // (Its other replicas hold theirs: a dry run plans replica 0.)
    for (auto& [key, other] : deployments_) {
      if (key == spec.name()) continue;
      deploy_internal::ForEachAssignedAttempt(*other, [&](const Attempt& a) { ctx.Take(a.placement()); });
    }
  }
  *d.mutable_spec() = spec;
  const int number = [&] {
    absl::MutexLock lock(&mu_);
    auto it = deployments_.find(spec.name());
    return it == deployments_.end() ? 1 : it->second->status().attempts_size() + 1;
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
  if (plan.outcome == LaunchPlan::Outcome::kCopyFirst) {
    st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
    st->set_message(absl::StrCat("dry run: would copy the model first: ", r.reason, "; then launch ",
                                 r.plan.stack_id(), " on node '", r.placement.node(), "' devices [",
                                 absl::StrJoin(r.placement.device_indices(), ","), "] TP=", r.placement.tp()));
    return d;
  }
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
