#include "controller/core/replica_set.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace dcu::controller {

using dcufleet::v1::Deployment;
using dcufleet::v1::ReplicaView;

bool IsReplicaKeyOf(absl::string_view key, absl::string_view name) {
  if (!absl::StartsWith(key, name)) return false;
  return key.size() == name.size() || key[name.size()] == '#';
}

int64_t BornAtMs(const Deployment& d) {
  return d.uid_created_at_ms() > 0 ? d.uid_created_at_ms() : d.status().created_at_ms();
}

int Restarts(const Deployment& d) {
  int n = 0;
  for (const auto& a : d.status().attempts()) {
    if (a.ended_at_ms() != 0 && a.phase() != dcufleet::v1::INSTANCE_STOPPED) ++n;
  }
  return n;
}

bool ScaledToZero(const Deployment& d) {
  return d.status().scaled_to_zero() && !d.status().deleted();
}

Deployment ParkedReplica(const Deployment& r, int64_t now_ms) {
  Deployment d = r;
  if (d.has_target_spec()) {
    *d.mutable_spec() = d.target_spec();
    d.clear_target_spec();
  }
  d.mutable_spec()->set_replicas(0);
  auto* st = d.mutable_status();
  st->set_scaled_to_zero(true);
  st->set_phase(dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  st->set_endpoint("");
  st->set_ready_at_ms(0);
  st->set_next_attempt_at_ms(0);
  st->set_unserved_at_ms(0);
  st->clear_rejections();
  st->set_updated_at_ms(now_ms);
  st->set_message(ScaledToZeroMessage(d));
  d.set_revision(d.revision() + 1);
  return d;
}

std::string ScaledToZeroMessage(const Deployment& d) {
  const auto& attempts = d.status().attempts();
  if (!attempts.empty() && attempts[attempts.size() - 1].ended_at_ms() == 0) {
    const auto& a = attempts[attempts.size() - 1];
    return absl::StrCat("scaled to zero: stopping instance '", a.instance_id(), "' on node '",
                        a.placement().node(), "'");
  }
  return absl::StrCat("scaled to zero: no instance runs; 'dcuctl scale deployment ",
                      d.spec().name(), " --replicas N' starts N again");
}

ReplicaView ViewOfReplica(const Deployment& d) {
  ReplicaView v;
  const auto& st = d.status();
  v.set_index(d.replica());
  v.set_phase(st.phase());
  v.set_message(st.message());
  v.set_endpoint(st.endpoint());
  v.set_ready_at_ms(st.ready_at_ms());
  v.set_attempts(st.attempts_size());
  v.set_restarts(Restarts(d));
  v.set_created_at_ms(st.created_at_ms());
  v.set_updated(OnTargetSpec(d));
  v.set_unserved(st.unserved_at_ms() != 0);
  // A deployment scaled to zero shows its last instance only while it stops.
  const bool shows_attempt = !st.attempts().empty() &&
                             (!ScaledToZero(d) || st.attempts(st.attempts_size() - 1).ended_at_ms() == 0);
  if (shows_attempt) {
    const auto& a = st.attempts(st.attempts_size() - 1);
    v.set_node(a.placement().node());
    for (int i : a.placement().device_indices()) v.add_device_indices(i);
    v.set_port(a.placement().port());
    v.set_instance_id(a.instance_id());
    v.set_stack_id(a.stack_id());
  }
  return v;
}

SpeakingReplicas SpeakingReplicaOf(const std::vector<const Deployment*>& replicas) {
  SpeakingReplicas out;
  std::vector<const Deployment*> sorted = replicas;
  std::sort(sorted.begin(), sorted.end(),
            [](const Deployment* a, const Deployment* b) { return a->replica() < b->replica(); });
  // A replica being removed (scale-down, rollout, leaving a draining node)
  // speaks for the deployment only when every replica is: shown, its
  // `deleted` made the whole model vanish from the serving view (the
  // gateway answered 404 while the replacement served).
  const Deployment*& shown = out.shown;
  shown = sorted.front();
  for (const Deployment* r : sorted) {
    if (!r->status().deleted()) {
      shown = r;
      break;
    }
  }
  int ready = 0;
  for (const Deployment* r : sorted) ready += r->status().phase() == dcufleet::v1::DEPLOYMENT_READY;
  auto first_live = [&](bool is_ready) -> const Deployment* {
    for (const Deployment* r : sorted) {
      if (!r->status().deleted() && (r->status().phase() == dcufleet::v1::DEPLOYMENT_READY) == is_ready) {
        return r;
      }
    }
    return nullptr;
  };
  // A replica that is not Ready speaks for the deployment while fewer than
  // wanted serve. With enough serving, one more still coming (a
  // replacement for a replica on a draining node that has nowhere to go,
  // a rollout's surge) is extra work, not the deployment's state: a Ready
  // one speaks and the message names the extra replica.
  if (const Deployment* waiting = first_live(false)) {
    if (ready < std::max(1, shown->spec().replicas())) {
      shown = waiting;
    } else {
      out.extra = waiting;
      if (const Deployment* serving = first_live(true)) shown = serving;
    }
  }
  out.sorted = std::move(sorted);
  out.ready = ready;
  return out;
}

Deployment AggregateReplicas(const std::vector<const Deployment*>& replicas, int64_t revision) {
  const SpeakingReplicas speaking = SpeakingReplicaOf(replicas);
  const std::vector<const Deployment*>& sorted = speaking.sorted;
  const Deployment* shown = speaking.shown;
  const Deployment* extra = speaking.extra;
  const int ready = speaking.ready;
  Deployment out = *shown;
  out.clear_replicas();
  // Filled on read: a document created since carries none (revision 1).
  if (!out.has_current_revision()) *out.mutable_current_revision() = CurrentRevision(out);
  int updated = 0, live = 0;
  for (const Deployment* r : sorted) {
    *out.add_replicas() = ViewOfReplica(*r);
    if (r->status().deleted()) continue;
    ++live;
    if (OnTargetSpec(*r)) ++updated;
  }
  out.set_ready_replicas(ready);
  out.set_updated_replicas(updated);
  // Readers see the spec the deployment is rolling to, not the shown
  // replica's older one.
  if (shown->has_target_spec()) {
    *out.mutable_spec() = shown->target_spec();
    out.mutable_spec()->set_replicas(shown->spec().replicas());
  }
  if (updated < live) {
    out.set_rollout_message(absl::StrCat("rolling out: ", updated, " of ",
                                         std::max(1, out.spec().replicas()),
                                         " replicas on the new spec"));
  }
  // Not Ready while replicas still run an older spec: the rollout is work
  // in progress (READY n/m still counts the replicas that serve).
  if (!out.rollout_message().empty() &&
      out.status().phase() == dcufleet::v1::DEPLOYMENT_READY && !out.status().deleted()) {
    out.mutable_status()->set_phase(dcufleet::v1::DEPLOYMENT_LAUNCHING);
    out.mutable_status()->set_message(out.rollout_message());
  }
  out.set_revision(revision);
  // Spec replicas 0: a document written before replicas existed (one), or
  // a deployment scaled to zero (none).
  const int desired = ScaledToZero(*shown) ? 0 : std::max(1, out.spec().replicas());
  auto* st = out.mutable_status();
  // The incarnation's creation is the deployment's (AGE, and where its
  // events start): the oldest replica's was, until a rollout or a scale
  // replaced every replica and the deployment looked minutes old, its
  // Created and RolloutStarted events gone from describe.
  int64_t created = BornAtMs(*shown);
  for (const Deployment* r : sorted) {
    const int64_t born = BornAtMs(*r);
    if (born > 0 && (created == 0 || born < created)) created = born;
  }
  st->set_created_at_ms(created);
  out.set_uid_created_at_ms(created);
  if (sorted.size() > 1 || desired > 1) {
    // A deployment with some replicas still coming (or gone) is not Ready;
    // the message says which replica speaks.
    if (ready < desired && st->phase() == dcufleet::v1::DEPLOYMENT_READY && !st->deleted()) {
      st->set_phase(dcufleet::v1::DEPLOYMENT_LAUNCHING);
      st->set_message(absl::StrCat(ready, " of ", desired, " replicas Ready"));
    } else if (st->phase() != dcufleet::v1::DEPLOYMENT_READY) {
      st->set_message(absl::StrCat("replica ", shown->replica(), ": ", st->message()));
    } else if (extra) {
      st->set_message(absl::StrCat(ready, " of ", desired, " replicas Ready; replica ",
                                   extra->replica(), ": ", extra->status().message()));
    }
  }
  return out;
}

namespace {

// Whether a replica is already on its way out (a scale-down or a delete).
bool Leaving(const Deployment& d) { return d.status().deleted(); }

}  // namespace

std::vector<int> ReplicasToRemove(const std::vector<const Deployment*>& replicas, int target) {
  std::vector<const Deployment*> kept;
  for (const Deployment* r : replicas) {
    if (!Leaving(*r)) kept.push_back(r);
  }
  if (static_cast<int>(kept.size()) <= target) return {};
  std::map<std::string, int> per_node;
  auto node_of = [](const Deployment& d) -> std::string {
    const auto& at = d.status().attempts();
    return at.empty() ? "" : at[at.size() - 1].placement().node();
  };
  for (const Deployment* r : kept) {
    std::string n = node_of(*r);
    if (!n.empty()) ++per_node[n];
  }
  // Worst first: not Ready, then the most crowded node, then the highest index.
  auto badness = [&](const Deployment* r) {
    const bool ready = r->status().phase() == dcufleet::v1::DEPLOYMENT_READY;
    std::string n = node_of(*r);
    int crowd = n.empty() ? 0 : per_node[n];
    return std::make_tuple(ready ? 0 : 1, crowd, r->replica());
  };
  std::sort(kept.begin(), kept.end(),
            [&](const Deployment* a, const Deployment* b) { return badness(a) > badness(b); });
  std::vector<int> out;
  for (size_t i = 0; i < kept.size() - static_cast<size_t>(target); ++i) {
    out.push_back(kept[i]->replica());
  }
  return out;
}

std::vector<int> ReplicasToAdd(const std::vector<const Deployment*>& replicas, int target) {
  std::vector<bool> used;
  int live = 0;
  for (const Deployment* r : replicas) {
    if (r->replica() >= static_cast<int>(used.size())) used.resize(r->replica() + 1, false);
    // A replica still being removed keeps its index (and its key) until it
    // is gone.
    used[r->replica()] = true;
    if (!Leaving(*r)) ++live;
  }
  std::vector<int> out;
  for (int i = 0; live + static_cast<int>(out.size()) < target; ++i) {
    if (i < static_cast<int>(used.size()) && used[i]) continue;
    out.push_back(i);
  }
  return out;
}

const dcufleet::v1::DeploymentSpec& TargetSpec(const Deployment& d) {
  return d.has_target_spec() ? d.target_spec() : d.spec();
}

bool SameSpecButReplicas(const dcufleet::v1::DeploymentSpec& a,
                         const dcufleet::v1::DeploymentSpec& b) {
  dcufleet::v1::DeploymentSpec a2 = a, b2 = b;
  a2.clear_replicas();
  b2.clear_replicas();
  return google::protobuf::util::MessageDifferencer::Equals(a2, b2);
}

bool OnTargetSpec(const Deployment& d) {
  return !d.has_target_spec() || SameSpecButReplicas(d.spec(), d.target_spec());
}

std::string RevisionSummary(const dcufleet::v1::DeploymentSpec& spec) {
  return absl::StrCat("model ", spec.model(), spec.tp() ? absl::StrCat(" TP=", spec.tp()) : " TP=auto",
                      " max_model_len=", spec.max_model_len());
}

std::string CreationSummary(const dcufleet::v1::DeploymentSpec& spec) {
  return absl::StrCat(RevisionSummary(spec),
                      spec.replicas() > 1 ? absl::StrCat(" replicas=", spec.replicas()) : "",
                      spec.has_replicas() && spec.replicas() == 0 ? " replicas=0 (scaled to zero)"
                                                                  : "");
}

dcufleet::v1::SpecRevision CurrentRevision(const Deployment& d) {
  if (d.has_current_revision()) return d.current_revision();
  dcufleet::v1::SpecRevision r;
  if (d.has_previous_spec()) {
    r.set_number(2);
    r.set_change("a rollout before revisions were kept");
    return r;
  }
  r.set_number(1);
  r.set_since_ms(BornAtMs(d));
  r.set_change(absl::StrCat("created: ", RevisionSummary(d.spec())));
  return r;
}

void StartRevision(Deployment* d, const dcufleet::v1::DeploymentSpec& next, int64_t now_ms,
                   std::string change) {
  dcufleet::v1::SpecRevision was = CurrentRevision(*d);
  *was.mutable_spec() = TargetSpec(*d);
  *d->mutable_previous_spec() = was.spec();
  int newest = was.number();
  auto* history = d->mutable_revision_history();
  for (const auto& r : *history) newest = std::max(newest, r.number());
  history->erase(std::remove_if(history->begin(), history->end(),
                                [&](const dcufleet::v1::SpecRevision& r) {
                                  return SameSpecButReplicas(r.spec(), next);
                                }),
                 history->end());
  *history->Add() = std::move(was);
  if (history->size() > kRevisionHistoryLimit) {
    history->DeleteSubrange(0, history->size() - kRevisionHistoryLimit);
  }
  dcufleet::v1::SpecRevision* current = d->mutable_current_revision();
  current->Clear();
  current->set_number(newest + 1);
  current->set_since_ms(now_ms);
  current->set_change(std::move(change));
}

std::string SpecChanges(const dcufleet::v1::DeploymentSpec& from,
                        const dcufleet::v1::DeploymentSpec& to) {
  using google::protobuf::FieldDescriptor;
  const auto* desc = from.GetDescriptor();
  const auto* refl = from.GetReflection();
  std::vector<std::string> out;
  auto text = [&](const dcufleet::v1::DeploymentSpec& m, const FieldDescriptor* f) {
    if (f->is_repeated() || f->is_map()) {
      std::vector<std::string> items;
      for (int i = 0; i < refl->FieldSize(m, f); ++i) {
        std::string v;
        google::protobuf::TextFormat::PrintFieldValueToString(m, f, i, &v);
        items.push_back(v);
      }
      return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
    }
    // An unset pin reads as what it means, not as its zero ("tp 4 -> 0"
    // read as a request for no devices).
    if (!refl->HasField(m, f)) {
      if (f->name() == "tp") return std::string("auto");
      if (f->name() == "node" || f->name() == "stack_id" || f->name() == "runtime") {
        return std::string("any");
      }
    }
    std::string v;
    google::protobuf::TextFormat::PrintFieldValueToString(m, f, -1, &v);
    return v;
  };
  for (int i = 0; i < desc->field_count(); ++i) {
    const FieldDescriptor* f = desc->field(i);
    if (f->name() == "replicas") continue;
    std::string a = text(from, f), b = text(to, f);
    if (a == b) continue;
    // A time in ms says nothing to a reader; what it asks for does.
    out.push_back(f->name() == "restarted_at_ms" ? std::string("restart requested")
                                                 : absl::StrCat(f->name(), " ", a, " -> ", b));
  }
  return absl::StrJoin(out, ", ");
}

namespace {

// A step that removes a deployment's only live replica adds its replacement
// with it. Removed alone, the deployment would have no replica left: the
// pass forgets a removed replica once nothing runs, and a name with no
// replica is a deleted deployment ("Deleted: all instances stopped"). A
// rollout of a deployment stuck Unschedulable lost it that way.
void ReplaceTheLastInTheSameStep(const std::vector<const Deployment*>& replicas,
                                 absl::string_view where, int* add, std::string* why) {
  std::vector<int> free = ReplicasToAdd(replicas, 2);
  if (free.empty()) return;
  *add = free.front();
  absl::StrAppend(why, "; replica ", *add, " added ", where, " in the same step (it was the only one)");
}

}  // namespace

RolloutStep NextRolloutStep(const std::vector<const Deployment*>& replicas,
                            const dcufleet::v1::DeploymentSpec& target) {
  RolloutStep step;
  std::vector<const Deployment*> old_live, new_live;
  for (const Deployment* r : replicas) {
    // One change at a time: a replica still being removed holds devices the
    // next step may need.
    if (Leaving(*r)) return step;
    (SameSpecButReplicas(r->spec(), target) ? new_live : old_live).push_back(r);
  }
  const int desired = std::max(1, target.replicas());
  const int live = static_cast<int>(old_live.size() + new_live.size());
  if (old_live.empty()) {
    // Every old replica is gone; one removed before its replacement came
    // (no room, or not Ready) is made up for.
    if (live < desired) {
      std::vector<int> add = ReplicasToAdd(replicas, live + 1);
      if (!add.empty()) {
        step.add = add.front();
        step.why = absl::StrCat("replica ", step.add, " added on the new spec (", live, " of ",
                                desired, " live)");
      }
    }
    return step;
  }
  bool new_unschedulable = false, new_starting = false;
  for (const Deployment* r : new_live) {
    auto phase = r->status().phase();
    if (phase == dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE) {
      // With a usable plan left, what it lacks is room (devices, memory,
      // ports), which an old replica's removal gives; with none (every
      // stack failed on the new spec), removing one would only lose it.
      const auto& failed = r->status().failed_stacks();
      bool usable = std::any_of(
          r->status().plans().begin(), r->status().plans().end(), [&](const auto& p) {
            return std::find(failed.begin(), failed.end(), p.stack_id()) == failed.end();
          });
      if (usable) {
        new_unschedulable = true;
      } else {
        new_starting = true;
      }
    } else if (phase != dcufleet::v1::DEPLOYMENT_READY) {
      new_starting = true;
    }
  }
  auto worst_old = [&]() {
    std::vector<int> r = ReplicasToRemove(old_live, static_cast<int>(old_live.size()) - 1);
    return r.empty() ? -1 : r.front();
  };
  // An old replica that is not Ready serves nobody: it goes first, whatever
  // the new ones are doing.
  for (const Deployment* r : old_live) {
    if (r->status().phase() != dcufleet::v1::DEPLOYMENT_READY && live > desired - 1) {
      step.remove = worst_old();
      step.why = absl::StrCat("replica ", step.remove, " (old spec, not Ready) removed");
      if (live == 1) ReplaceTheLastInTheSameStep(replicas, "on the new spec", &step.add, &step.why);
      return step;
    }
  }
  if (new_unschedulable && !new_starting) {
    // No room for a surge: make room (N-1 stay Ready).
    step.remove = worst_old();
    step.why = absl::StrCat("no free devices for a replica on the new spec: replica ",
                            step.remove, " (old spec) removed to make room");
    return step;
  }
  if (new_starting || new_unschedulable) return step;
  if (live > desired) {
    step.remove = worst_old();
    step.why = absl::StrCat("replica ", step.remove, " (old spec) removed: ", new_live.size(),
                            " on the new spec are Ready");
    return step;
  }
  std::vector<int> add = ReplicasToAdd(replicas, live + 1);
  if (!add.empty()) {
    step.add = add.front();
    step.why = absl::StrCat("replica ", step.add, " added on the new spec (", old_live.size(),
                            " on the old spec to replace)");
  }
  return step;
}

EvacuationStep NextEvacuationStep(const std::vector<const Deployment*>& replicas,
                                  const std::set<std::string>& draining, int64_t now_ms,
                                  absl::Duration serving_drain) {
  EvacuationStep step;
  // The node a replica runs on: its last attempt, while that has not ended
  // (one that ended waits to be placed again, on no node).
  auto node_of = [](const Deployment& d) -> std::string {
    const auto& at = d.status().attempts();
    if (at.empty() || at[at.size() - 1].ended_at_ms() != 0) return "";
    return at[at.size() - 1].placement().node();
  };
  auto ready = [](const Deployment& d) {
    return d.status().phase() == dcufleet::v1::DEPLOYMENT_READY;
  };
  std::vector<const Deployment*> evacuees, staying;
  for (const Deployment* r : replicas) {
    // Scaled to zero: nothing to move (its instance is being stopped).
    if (ScaledToZero(*r)) {
      step.done = true;
      return step;
    }
  }
  for (const Deployment* r : replicas) {
    if (Leaving(*r)) return step;  // one change at a time
    (draining.count(node_of(*r)) ? evacuees : staying).push_back(r);
  }
  if (replicas.empty()) {
    step.done = true;
    return step;
  }
  const int desired = std::max(1, replicas.front()->spec().replicas());
  const int live = static_cast<int>(replicas.size());
  if (evacuees.empty()) {
    if (live > desired) {
      std::vector<int> r = ReplicasToRemove(replicas, desired);
      if (!r.empty()) {
        step.remove = r.front();
        step.why = absl::StrCat("replica ", step.remove, " removed: nothing is left on a draining "
                                "node, and ", live, " replicas live for ", desired);
        return step;
      }
    }
    step.done = true;
    return step;
  }
  std::sort(evacuees.begin(), evacuees.end(),
            [](const Deployment* a, const Deployment* b) { return a->replica() < b->replica(); });
  for (const Deployment* e : evacuees) {
    if (!ready(*e)) {
      step.remove = e->replica();
      step.why = absl::StrCat("replica ", step.remove, " on draining node '", node_of(*e),
                              "' is not Ready: removed, a replacement is placed elsewhere");
      if (live == 1) ReplaceTheLastInTheSameStep(replicas, "to be placed elsewhere", &step.add, &step.why);
      return step;
    }
  }
  const Deployment* first = evacuees.front();
  if (live <= desired) {
    std::vector<int> add = ReplicasToAdd(replicas, live + 1);
    if (!add.empty()) {
      step.add = add.front();
      step.why = absl::StrCat("replica ", step.add, " added to replace replica ", first->replica(),
                              " on draining node '", node_of(*first), "'");
    }
    return step;
  }
  const int ready_staying = static_cast<int>(
      std::count_if(staying.begin(), staying.end(), [&](const Deployment* r) { return ready(*r); }));
  // Removing one replica on a draining node leaves the others there, which
  // still serve: it may go once the Ready replicas elsewhere make up for it.
  if (ready_staying >= desired - static_cast<int>(evacuees.size()) + 1) {
    const int64_t unserved = first->status().unserved_at_ms();
    if (unserved == 0) {
      step.unserve = first->replica();
      step.why = absl::StrCat("replica ", step.unserve, " on draining node '", node_of(*first),
                              "' out of rotation (its replacement is Ready); it stops in ",
                              absl::FormatDuration(serving_drain));
    } else if (now_ms - unserved >= absl::ToInt64Milliseconds(serving_drain)) {
      step.remove = first->replica();
      step.why = absl::StrCat("replica ", step.remove, " removed from draining node '",
                              node_of(*first), "': its replacement is Ready");
    }
  }
  return step;
}

}  // namespace dcu::controller
