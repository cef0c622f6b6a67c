#include "controller/core/replica_set.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dcu::controller {

using dcufleet::v1::Deployment;
using dcufleet::v1::ReplicaView;

bool IsReplicaKeyOf(absl::string_view key, absl::string_view name) {
  if (!absl::StartsWith(key, name)) return false;
  return key.size() == name.size() || key[name.size()] == '#';
}

int Restarts(const Deployment& d) {
  int n = 0;
  for (const auto& a : d.status().attempts()) {
    if (a.ended_at_ms() != 0 && a.phase() != dcufleet::v1::INSTANCE_STOPPED) ++n;
  }
  return n;
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
  if (!st.attempts().empty()) {
    const auto& a = st.attempts(st.attempts_size() - 1);
    v.set_node(a.placement().node());
    for (int i : a.placement().device_indices()) v.add_device_indices(i);
    v.set_port(a.placement().port());
    v.set_instance_id(a.instance_id());
    v.set_stack_id(a.stack_id());
  }
  return v;
}

Deployment AggregateReplicas(const std::vector<const Deployment*>& replicas, int64_t revision) {
  std::vector<const Deployment*> sorted = replicas;
  std::sort(sorted.begin(), sorted.end(),
            [](const Deployment* a, const Deployment* b) { return a->replica() < b->replica(); });
  const Deployment* shown = sorted.front();
  int ready = 0;
  for (const Deployment* r : sorted) {
    if (r->status().phase() == dcufleet::v1::DEPLOYMENT_READY) {
      ++ready;
    } else if (shown->status().phase() == dcufleet::v1::DEPLOYMENT_READY) {
      shown = r;
    }
  }
  Deployment out = *shown;
  out.clear_replicas();
  for (const Deployment* r : sorted) *out.add_replicas() = ViewOfReplica(*r);
  out.set_ready_replicas(ready);
  out.set_revision(revision);
  const int desired = out.spec().replicas() > 0 ? out.spec().replicas() : 1;
  auto* st = out.mutable_status();
  // The oldest replica's creation is the deployment's (AGE).
  int64_t created = st->created_at_ms();
  for (const Deployment* r : sorted) {
    if (r->status().created_at_ms() > 0 && (created == 0 || r->status().created_at_ms() < created)) {
      created = r->status().created_at_ms();
    }
  }
  st->set_created_at_ms(created);
  if (sorted.size() > 1 || desired > 1) {
    // A deployment with some replicas still coming (or gone) is not Ready;
    // the message says which replica speaks.
    if (ready < desired && st->phase() == dcufleet::v1::DEPLOYMENT_READY && !st->deleted()) {
      st->set_phase(dcufleet::v1::DEPLOYMENT_LAUNCHING);
      st->set_message(absl::StrCat(ready, " of ", desired, " replicas Ready"));
    } else if (st->phase() != dcufleet::v1::DEPLOYMENT_READY) {
      st->set_message(absl::StrCat("replica ", shown->replica(), ": ", st->message()));
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

}  // namespace dcu::controller
