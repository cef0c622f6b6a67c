#include "controller/core/deploy_controller.h"

// The loop, persistence and pushing assignments. Admission (Deploy, dry run,
// Delete, the group-committing writer) is in deploy_admission.cc; what one
// deployment's step does (Observe, launch, follow, remediate) in
// deploy_step.cc.

#include <algorithm>
#include <memory>
#include <optional>
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
#include "controller/core/model_sources.h"
#include "controller/core/replica_set.h"

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

DeployController::DeployController(FleetState* fleet, Knowledge* knowledge, Diagnoser* diagnoser,
                                   DeploymentStore* store, EventLog* events,
                                   const common::Clock* clock, Options options)
    : fleet_(fleet),
      knowledge_(knowledge),
      diagnoser_(diagnoser),
      store_(store),
      events_(events),
      clock_(clock),
      options_(options),
      planner_(knowledge, knowledge),
      policy_(knowledge, knowledge, knowledge) {
  rng_state_ = options_.jitter_seed ? options_.jitter_seed
                                    : static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
}

DeployController::~DeployController() { Stop(); }

absl::Status DeployController::Load() {
  auto ds = store_->ListDeployments();
  if (!ds.ok()) return ds.status();
  auto gens = store_->ListNodeGenerations();
  if (!gens.ok()) return gens.status();
  absl::MutexLock lock(&mu_);
  for (auto& d : *ds) {
    // Findings stored with string kinds/actions are read as enums; the
    // document is rewritten in the new form the next time it changes.
    UpgradeStoredFindings(d);
    revisions_[d.spec().name()] += d.revision();
    ++changes_;
    // A rollout in progress goes on after a restart: its target is on
    // every live replica.
    if (!d.status().deleted() && !OnTargetSpec(d)) rolling_.insert(d.spec().name());
    PutDoc(std::move(d));
  }
  for (auto& [node, gen] : *gens) generations_[node] = gen;
  dirty_ = true;
  return absl::OkStatus();
}

void DeployController::Start() {
  if (options_.interval <= absl::ZeroDuration()) return;
  {
    absl::MutexLock lock(&write_mu_);
    writer_running_ = true;
  }
  writer_ = std::thread([this] { WriterLoop(); });
  thread_ = std::thread([this] { Run(); });
}

void DeployController::Stop() {
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  if (thread_.joinable()) thread_.join();
  {
    // Later Deploys commit inline; the writer drains what is queued.
    absl::MutexLock lock(&write_mu_);
    writer_running_ = false;
    writer_stop_ = true;
  }
  if (writer_.joinable()) writer_.join();
}

void DeployController::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return dirty_ || shutdown_; };
      mu_.AwaitWithTimeout(absl::Condition(&wake), options_.interval);
      if (shutdown_) return;
      dirty_ = false;
    }
    ReconcileOnce();
  }
}

std::vector<DeployController::DocPtr> DeployController::SnapshotDocs() const {
  std::vector<DocPtr> out;
  out.reserve(deployments_.size());
  for (const auto& [key, d] : deployments_) out.push_back(d);
  return out;
}

void DeployController::PutDoc(Deployment d) {
  std::string key = ReplicaKey(d);
  SetDoc(key, std::make_shared<const Deployment>(std::move(d)));
}

void DeployController::TakeInWritten(Deployment d) {
  // A node whose instance this document no longer wants is told again.
  if (!deploy_internal::WantsInstance(d)) {
    for (const auto& a : d.status().attempts()) recompute_.insert(a.placement().node());
  }
  PutDoc(std::move(d));
}

void DeployController::SetDoc(const std::string& key, DocPtr doc) {
  // The nodes are collected first and the index changed outside the
  // callbacks: clang's thread-safety analysis does not see mu_ held inside a
  // lambda.
  auto nodes_of = [](const Deployment& d) {
    absl::InlinedVector<const std::string*, 2> nodes;
    deploy_internal::ForEachAssignedAttempt(d, [&](const Attempt& a) { nodes.push_back(&a.placement().node()); });
    return nodes;
  };
  auto it = deployments_.find(key);
  if (it != deployments_.end()) {
    for (const std::string* node : nodes_of(*it->second)) {
      auto n = keys_by_node_.find(*node);
      if (n == keys_by_node_.end()) continue;
      n->second.erase(key);
      if (n->second.empty()) keys_by_node_.erase(n);
    }
  }
  if (doc) {
    for (const std::string* node : nodes_of(*doc)) keys_by_node_[*node].insert(key);
  }
  if (!doc) {
    if (it != deployments_.end()) deployments_.erase(it);
  } else if (it != deployments_.end()) {
    it->second = std::move(doc);
  } else {
    deployments_.emplace(key, std::move(doc));
  }
}

void DeployController::MarkDirty() {
  absl::MutexLock lock(&mu_);
  dirty_ = true;
}

void DeployController::OnNodeConnected(const std::string& node) {
  absl::MutexLock lock(&mu_);
  resend_.insert(node);
  observe_.insert(node);
  dirty_ = true;
}

std::vector<InstanceSpec> DeployController::AssignedTo(const std::string& node) const {
  absl::MutexLock lock(&mu_);
  std::vector<InstanceSpec> out;
  auto keys = keys_by_node_.find(node);
  if (keys == keys_by_node_.end()) return out;
  for (const std::string& key : keys->second) {
    deploy_internal::ForEachAssignedAttempt(*deployments_.at(key), [&](const Attempt& a) {
      if (a.placement().node() == node) out.push_back(a.instance());
    });
  }
  return out;
}

void DeployController::AddEvent(StepContext& ctx, const Deployment& d, const std::string& type,
                                const std::string& reason, const std::string& message) {
  // One event stream per deployment; a replica of several says which.
  ctx.events.push_back(Event{0, ctx.now_ms, "deployment", d.spec().name(), type, reason,
                             d.spec().replicas() > 1
                                 ? absl::StrCat("replica ", d.replica(), ": ", message)
                                 : message});
}

absl::Duration DeployController::Backoff(const Deployment& d, int failures_on_plan) {
  // Exponential from the initial value, capped, with ±20% jitter so a fleet
  // of failing deployments does not retry in lockstep.
  double base = d.spec().backoff_initial_s();
  for (int i = 1; i < failures_on_plan && base < d.spec().backoff_max_s(); ++i) base *= 2;
  base = std::min<double>(base, d.spec().backoff_max_s());
  uint64_t x;
  {
    absl::MutexLock lock(&mu_);
    rng_state_ ^= rng_state_ << 13;
    rng_state_ ^= rng_state_ >> 7;
    rng_state_ ^= rng_state_ << 17;
    x = rng_state_;
  }
  double jitter = 0.8 + 0.4 * static_cast<double>(x % 10000) / 10000.0;
  return absl::Seconds(base * jitter);
}

ScheduleInput DeployController::MakeScheduleInput(const Deployment& d, StepContext& ctx) {
  ScheduleInput in;
  in.spec = d.spec();
  auto mit = ctx.models.find(d.spec().model());
  if (mit == ctx.models.end()) mit = ctx.models.emplace(d.spec().model(), knowledge_->Model(d.spec().model())).first;
  if (mit->second.ok()) in.model = *mit->second;
  in.nodes = &ctx.sched;
  in.shapes = &ctx.shapes;
  const std::string model_name = d.spec().model();
  StepContext* c = &ctx;
  in.plans_for_arch = [this, c, model_name](const std::string& arch) {
    auto [it, inserted] = c->plans.try_emplace({model_name, arch});
    if (inserted) {
      auto set = std::make_shared<ArchPlanSet>();
      knowledge_->PlansForArch(model_name, arch, &set->plans, &set->excluded);
      it->second = std::move(set);
    }
    return it->second;
  };
  // `d` outlives the input: both callers schedule within the step that
  // holds it.
  const DeploymentSpec* spec = &d.spec();
  in.memory = [this, c, spec](int tp, int64_t total) {
    auto [it, inserted] = c->memory.try_emplace(StepContext::MemoryKey{
        spec->model(), spec->max_model_len(), spec->max_num_seqs(),
        spec->gpu_memory_utilization(), tp, total});
    if (inserted) {
      it->second = std::make_shared<const MemoryCheck>(knowledge_->CheckMemory(*spec, tp, total));
    }
    return it->second;
  };
  in.model_path_on_node = [this, model_name](const NodeView& n) {
    return knowledge_->ModelPathOnNode(model_name, n);
  };
  in.model_damage_on_node = [this, model_name](const NodeView& n) {
    return knowledge_->ModelDamageOnNode(model_name, n);
  };
  const ModelOrigins origins{options_.model_shared_dir, options_.model_mirror, in.model.hf_repo};
  // The nodes holding a usable copy, found once per call and only when the
  // scheduler asks (no node with the model fits): each candidate then costs
  // a look at those few nodes, not a walk over the fleet.
  auto holders = std::make_shared<std::optional<std::vector<const NodeView*>>>();
  in.model_copy_to_node = [this, c, model_name, origins, holders](const NodeView& n) {
    if (!holders->has_value()) {
      holders->emplace();
      for (const auto& v : c->views) {
        if (!knowledge_->ModelPathOnNode(model_name, *v).empty()) (*holders)->push_back(v.get());
      }
    }
    return PlanCopyBeforeLaunch(
        model_name, n, **holders,
        [this, &model_name](const NodeView& v) { return knowledge_->ModelPathOnNode(model_name, v); }, origins);
  };
  in.runtime_on_node = [this](const dcufleet::v1::Plan& p, const NodeView& n) {
    return knowledge_->RuntimeOnNode(p, n);
  };
  in.port_base = options_.instance_port_base;
  for (const auto& s : d.status().failed_stacks()) in.excluded_stacks.insert(s);
  for (const auto& nd : d.status().avoided_devices()) {
    std::vector<std::string> parts = absl::StrSplit(nd, '/');
    int idx = 0;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[1], &idx)) in.avoid_devices[parts[0]].insert(idx);
  }
  for (int p : d.status().avoided_ports()) in.avoid_ports.insert(p);
  // Replicas spread across nodes first (then across devices: a replica
  // never shares a device, since every active attempt holds its devices).
  if (d.spec().replicas() > 1) in.replicas_on_node = &ctx.replica_nodes[d.spec().name()];
  auto it = ctx.first_usable.find(CursorKey(d.spec()));
  if (it != ctx.first_usable.end()) in.first_node = it->second;
  return in;
}

std::tuple<std::string, double, int> DeployController::CursorKey(const DeploymentSpec& spec) {
  return {spec.model(), spec.gpu_memory_utilization(), spec.tp()};
}

void DeployController::BuildContext(StepContext& ctx) {
  ctx.now = clock_->Now();
  ctx.now_ms = absl::ToUnixMillis(ctx.now);
  std::vector<FleetState::VersionedView> versioned = fleet_->SnapshotVersioned();
  ctx.views.clear();
  ctx.views.reserve(versioned.size());
  ctx.revisions.reserve(versioned.size());
  // The name index is rebuilt only when the set of nodes changed.
  absl::MutexLock lock(&cache_mu_);
  bool same_names = index_cache_ && index_names_.size() == versioned.size();
  for (size_t i = 0; i < versioned.size(); ++i) {
    if (same_names && index_names_[i] != versioned[i].view->name()) same_names = false;
    ctx.revisions.push_back(versioned[i].revision);
    ctx.views.push_back(std::move(versioned[i].view));
  }
  if (!same_names) {
    auto index = std::make_shared<absl::flat_hash_map<std::string, size_t>>();
    index->reserve(ctx.views.size());
    index_names_.clear();
    index_names_.reserve(ctx.views.size());
    for (size_t i = 0; i < ctx.views.size(); ++i) {
      (*index)[ctx.views[i]->name()] = i;
      index_names_.push_back(ctx.views[i]->name());
    }
    index_cache_ = std::move(index);
    ++index_epoch_;
  }
  ctx.index = index_cache_;
  ctx.index_epoch = index_epoch_;
}

void DeployController::BuildSchedule(StepContext& ctx) {
  // A node's scheduling summary is rebuilt only when its view's revision
  // changed since it was built; the pass copies one per node (what it
  // takes devices from), so only a pass that schedules or takes holdings
  // asks for them: at 10,000 nodes the copies were most of a pass with
  // nothing to step (BM_SteadyPass). Checked against this pass's views, not
  // assumed: a dry run may have rebuilt the cache from a newer snapshot
  // since BuildContext.
  absl::MutexLock lock(&cache_mu_);
  ctx.sched.clear();
  ctx.shapes.clear();
  ctx.sched.reserve(ctx.views.size());
  if (node_cache_.size() != ctx.views.size()) node_cache_.resize(ctx.views.size());
  for (size_t i = 0; i < ctx.views.size(); ++i) {
    const NodeView& v = *ctx.views[i];
    CachedNode& c = node_cache_[i];
    if (!c.valid || c.revision != ctx.revisions[i] || c.name != v.name()) {
      c.name = v.name();
      c.revision = ctx.revisions[i];
      c.valid = true;
      c.node = MakeScheduleNode(v);
    }
    // A report that refreshed only times may have replaced the view object
    // without a new revision (FleetState::SnapshotVersioned): the summary
    // stays, its pointer follows the view this pass holds.
    c.node.view = &v;
    ctx.sched.push_back(c.node);
  }
  ShareHostPorts(ctx);
  // Few distinct shapes: a short list, not a set keyed by strings.
  for (const auto& n : ctx.sched) {
    if (!n.ready || n.arch.empty()) continue;
    bool known = false;
    for (const auto& [arch, total] : ctx.shapes) known |= total == n.device_total && arch == n.arch;
    if (!known) ctx.shapes.emplace_back(n.arch, n.device_total);
  }
}

void DeployController::ShareHostPorts(StepContext& ctx) {
  // Nodes with one address are one host: an instance's port on one is taken
  // on all (before, the next node's launch met "address already in use").
  // Most fleets have one node per address and pay one hash per node; a
  // shared address costs one set per address, not a copy per node.
  ctx.shared_host_ports.clear();
  absl::flat_hash_map<absl::string_view, size_t> first_at;
  first_at.reserve(ctx.sched.size());
  for (size_t i = 0; i < ctx.sched.size(); ++i) {
    ScheduleNode& n = ctx.sched[i];
    n.host_ports = nullptr;
    const std::string& address = n.view->address();
    if (address.empty()) continue;
    auto [it, first] = first_at.emplace(address, i);
    if (first) continue;
    ScheduleNode& head = ctx.sched[it->second];
    if (!head.host_ports) {
      head.host_ports = &ctx.shared_host_ports.emplace_back();
      head.host_ports->insert(head.busy_ports.begin(), head.busy_ports.end());
    }
    n.host_ports = head.host_ports;
    n.host_ports->insert(n.busy_ports.begin(), n.busy_ports.end());
  }
}

bool DeployController::StillObserved(const ObserveMemo& memo, const StepContext& ctx) {
  if (memo.index_epoch != ctx.index_epoch || ctx.now_ms >= memo.inputs.recheck_at_ms) return false;
  for (const auto& [position, revision] : memo.inputs.nodes) {
    // Unknown then is unknown now: the index is the same.
    if (position == std::string::npos) continue;
    if (position >= ctx.revisions.size() || ctx.revisions[position] != revision) return false;
  }
  return true;
}

void DeployController::ReconcileOnce() {
  absl::MutexLock pass(&reconcile_mu_);
  const absl::Time t0 = absl::Now();
  StepContext ctx;
  // Rollouts move first, on the phases the last pass left: the replicas
  // they add are placed, and the ones they remove stopped, in this pass.
  AdvanceRollouts(&ctx.events);
  AdvanceEvacuations(&ctx.events);
  BuildContext(ctx);
  const absl::Time t_context = absl::Now();
  {
    // Model directories and environments change rarely: every node now and
    // then, (re)connected nodes at once.
    std::set<std::string> connected;
    {
      absl::MutexLock lock(&mu_);
      connected.swap(observe_);
    }
    bool all = ctx.now - last_observed_all_ >= options_.observe_all_interval;
    std::vector<const NodeView*> observe;
    for (const auto& v : ctx.views) {
      if (all || connected.count(v->name())) observe.push_back(v.get());
    }
    if (all) last_observed_all_ = ctx.now;
    if (!observe.empty()) knowledge_->ObserveNodes(observe);
  }
  const absl::Time t_observe = absl::Now();

  // Only deployments something may have happened to are copied and stepped;
  // the devices and ports of every active attempt are taken first. The walk
  // reads a snapshot of the (immutable) documents taken under mu_, not mu_
  // itself: a Deploy or a reader waits for the pointer copy only. What
  // changed meanwhile is caught when the pass applies its changes (the
  // revision check below) and stepped by the next pass.
  std::vector<Deployment> work;
  // Deleted documents with nothing left running, to forget: the key and
  // the revision the pass read.
  std::vector<std::pair<std::string, int64_t>> removed;
  std::vector<DocPtr> docs;
  {
    absl::MutexLock lock(&mu_);
    docs = SnapshotDocs();
  }
  // Observe reads the views and the clock only, so what to step is known
  // before the holdings are: a pass with nothing to step (most wake-ups of
  // a steady fleet: a report, a phase already followed) skips the walk that
  // takes every attempt's devices and ports (BM_SteadyPass).
  // A document whose inputs have not changed since the last pass observed
  // it is not observed again (ObserveMemo); the memo keeps only this pass's
  // documents.
  absl::flat_hash_map<const Deployment*, ObserveMemo> memo;
  memo.reserve(docs.size());
  for (const DocPtr& d : docs) {
    if (auto m = observe_memo_.find(d.get()); m != observe_memo_.end() && StillObserved(m->second, ctx)) {
      memo.insert(observe_memo_.extract(m));
    } else if (ObservedInputs inputs; Observe(*d, ctx, &inputs) != Transition::kNone) {
      work.push_back(*d);
      continue;
    } else {
      memo.emplace(d.get(), ObserveMemo{d, ctx.index_epoch, std::move(inputs)});
    }
    if (d->status().deleted() && !HasActiveAttempt(*d)) {
      removed.emplace_back(ReplicaKey(*d), d->revision());
    }
  }
  observe_memo_.swap(memo);
  const absl::Time t_observed_docs = absl::Now();
  absl::Time t_summaries = t_observed_docs;
  if (!work.empty() || !pools_.empty()) {
    BuildSchedule(ctx);
    t_summaries = absl::Now();
    for (const DocPtr& d : docs) {
      // An orphan holds its devices too: the node may still run it.
      deploy_internal::ForEachAssignedAttempt(*d, [&](const Attempt& a) { ctx.Take(a.placement()); });
      if (const Attempt* a = deploy_internal::LatestActive(*d); a && d->spec().replicas() > 1) {
        ctx.JoinNode(d->spec().name(), a->placement().node());
      }
      if (!pools_.empty()) CollectPoolDemandOf(*d, ctx);
    }
  }
  docs.clear();

  const absl::Time t_select = absl::Now();
  std::vector<Deployment> changed;
  for (auto& d : work) {
    const int64_t read = d.revision();
    bool stepped = Step(d, ctx);
    if (!pools_.empty()) UpdatePoolDemand(d, ctx);
    if (d.status().deleted() && !ActiveAttempt(d)) removed.emplace_back(ReplicaKey(d), read);
    if (stepped) {
      d.set_revision(d.revision() + 1);
      d.mutable_status()->set_updated_at_ms(ctx.now_ms);
      changed.push_back(std::move(d));
    }
  }

  for (NodePool* pool : pools_) {
    NodePool::Demand demand = ctx.pool_demand;
    demand.unplaceable = std::move(ctx.pool_unplaceable[pool->name()]);
    pool->SetDemand(std::move(demand));
  }
  const absl::Time t_step = absl::Now();
  // Not after the persist and the push: at 10,000 agents x 1/s with passes
  // back to back, reports copying views the pass still held were 8% of the
  // controller's CPU (perf).
  const size_t node_count = ctx.views.size();
  ctx.ReleaseViews();
  // Intent first: persist, then publish to memory, then tell the nodes.
  // Check, persist and publish in the order of document writes: a delete,
  // scale or rollout that wrote a document since this pass read it wins,
  // and the next pass steps what it wrote. Checked before the persist, so
  // the store never gets an older version after a newer one.
  DesiredSets desired;
  absl::Time t_persist;
  {
    absl::MutexLock order(&doc_write_mu_);
    {
      absl::MutexLock lock(&mu_);
      auto moved_on = [&](const std::string& key, int64_t read) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto it = deployments_.find(key);
        return it == deployments_.end() || it->second->revision() != read;
      };
      const size_t stepped = changed.size(), forgetting = removed.size();
      changed.erase(std::remove_if(changed.begin(), changed.end(),
                                   [&](const Deployment& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                                     return moved_on(ReplicaKey(d), d.revision() - 1);
                                   }),
                    changed.end());
      removed.erase(std::remove_if(removed.begin(), removed.end(),
                                   [&](const auto& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                                     return moved_on(r.first, r.second);
                                   }),
                    removed.end());
      if (changed.size() != stepped || removed.size() != forgetting) dirty_ = true;
    }
    absl::Status s = store_->PutDeployments(changed);
    t_persist = absl::Now();
    if (!s.ok()) {
      DCU_LOG_ERROR("persisting ", changed.size(), " deployments: ", s.message(), "; will retry");
      absl::MutexLock lock(&mu_);
      dirty_ = true;
      return;
    }
    if (!removed.empty()) {
      std::vector<std::string> keys;
      keys.reserve(removed.size());
      for (const auto& [key, read] : removed) keys.push_back(key);
      // Forgotten from memory below whatever the store says: a row left
      // behind comes back at a restart as a deleted document, which the
      // next pass forgets again.
      absl::Status ds = store_->DeleteDeployments(keys);
      if (!ds.ok()) DCU_LOG_WARN("deleting ", keys.size(), " deployment documents: ", ds.message());
    }
    // Per node whose set may have changed: its instances, pointing into the
    // document snapshot `docs` (kept until the push is done).
    {
      absl::MutexLock lock(&mu_);
      for (auto& d : changed) {
        // Checked above, and nothing wrote since (doc_write_mu_).
        auto it = deployments_.find(ReplicaKey(d));
        // Nodes of the attempts before and after: their desired sets change.
        for (const auto& a : it->second->status().attempts()) {
          ctx.touched.insert(a.placement().node());
        }
        for (const auto& a : d.status().attempts()) ctx.touched.insert(a.placement().node());
        announce_after_events_.push_back(d.spec().name());
        SetDoc(it->first, std::make_shared<const Deployment>(std::move(d)));
      }
      for (const auto& [key, read] : removed) {
        auto it = deployments_.find(key);
        for (const auto& a : it->second->status().attempts()) {
          ctx.touched.insert(a.placement().node());
        }
        const std::string name = it->second->spec().name();
        const int replica = it->second->replica();
        SetDoc(key, nullptr);
        announce_after_events_.push_back(name);
        if (ReplicasOf(name).empty()) {
          ctx.events.push_back(Event{0, ctx.now_ms, "deployment", name, "Normal", "Deleted",
                                     "all instances stopped"});
        } else {
          ctx.events.push_back(Event{0, ctx.now_ms, "deployment", name, "Normal", "ReplicaRemoved",
                                     absl::StrCat("replica ", replica, " stopped and removed")});
        }
      }
      for (const auto& n : resend_) ctx.touched.insert(n);
      for (const auto& n : recompute_) ctx.touched.insert(n);
      recompute_.clear();
      // Only the nodes whose set may have changed (or that reconnected) are
      // recomputed and compared with what they were last sent, from the
      // documents assigned to them (in key order, each once).
      std::set<std::string> keys;
      for (const auto& n : ctx.touched) {
        if (!ctx.Known(n)) continue;
        desired[n];
        auto k = keys_by_node_.find(n);
        if (k != keys_by_node_.end()) keys.insert(k->second.begin(), k->second.end());
      }
      docs.reserve(keys.size());
      for (const std::string& key : keys) docs.push_back(deployments_.at(key));
    }
  }
  // The desired sets from the documents as this pass left them, walked
  // without mu_ (the pointers taken above).
  for (const DocPtr& d : docs) {
    deploy_internal::ForEachAssignedAttempt(*d, [&](const Attempt& a) {
      auto it = desired.find(a.placement().node());
      if (it != desired.end()) it->second.push_back(&a.instance());
    });
  }
  const absl::Time t_desired = absl::Now();
  // The nodes are told as soon as the documents are persisted (the intent):
  // what follows is record, not intent, and a wave of placements waited for
  // it (outcomes and events are each a transaction, ~1 ms per 200 stepped).
  PushAssignments(desired);
  docs.clear();
  const absl::Time t_pushed = absl::Now();
  // The pass's launch outcomes, in one transaction: evidence, not
  // documents, so outside the order of document writes.
  knowledge_->FlushOutcomes();
  // Its events before its revisions are announced: a watcher that sees a
  // revision finds the events of the pass that made it.
  if (events_ && !ctx.events.empty()) {
    absl::Status es = events_->AppendEvents(ctx.events);
    if (!es.ok()) DCU_LOG_WARN("appending ", ctx.events.size(), " events: ", es.message());
  }
  AnnounceChanges();
  // One write for the pass's event lines (a fleet filling up logs
  // thousands per pass).
  if (common::GetLogLevel() <= common::LogLevel::kInfo) {
    std::vector<std::string> lines;
    lines.reserve(ctx.events.size());
    for (const auto& e : ctx.events) {
      lines.push_back(absl::StrCat("deployment '", e.subject, "' ", e.reason, ": ", e.message));
    }
    common::LogLines(common::LogLevel::kInfo, lines);
  }
  if (metrics_) {
    for (const auto& e : ctx.events) metrics_->OnDeploymentEvent(e.reason);
  }
  const absl::Time t_end = absl::Now();
  if (metrics_) metrics_->OnReconcilePass(t_end - t0);
  auto ms = [](absl::Duration d) { return absl::StrFormat("%.1f", absl::ToDoubleMilliseconds(d)); };
  DCU_LOG_DEBUG("reconcile pass: ", node_count, " nodes, ", work.size(), " stepped, ",
                changed.size(), " changed, ", desired.size(), " nodes pushed in ", ms(t_end - t0),
                " ms (context ", ms(t_context - t0), ", observe ", ms(t_observe - t_context),
                ", select ", ms(t_observed_docs - t_observe), ", summaries ", ms(t_summaries - t_observed_docs), ", holdings ",
                ms(t_select - t_summaries), ", step ",
                ms(t_step - t_select), ", persist ", ms(t_persist - t_step), ", desired ",
                ms(t_desired - t_persist), ", push ", ms(t_pushed - t_desired), ", outcomes and events ",
                ms(t_end - t_pushed), ")");
}

void DeployController::AnnounceChanges() {
  absl::MutexLock lock(&mu_);
  for (const std::string& name : announce_after_events_) {
    // A name whose last replica went is gone, unless a Deploy of the same
    // name came in since.
    if (ReplicasOf(name).empty()) {
      NoteGone(name);
    } else {
      NoteChange(name);
    }
  }
  announce_after_events_.clear();
}

void DeployController::PushAssignments(const DesiredSets& desired) {
  std::vector<std::pair<std::string, int64_t>> sent;
  for (const auto& [node, specs] : desired) {
    // The set is compared with what the node was last sent by its ids; a
    // changed one is laid out from each instance's bytes, encoded once per
    // node (assignment_wire.h).
    auto it = sent_.find(node);
    const EncodedAssignment* previous = it == sent_.end() ? nullptr : &it->second;
    const bool same = previous != nullptr && previous->delivered && previous->SameInstances(specs);
    int64_t gen = 0;
    {
      absl::MutexLock lock(&mu_);
      const bool resend = resend_.count(node) > 0;
      if (same && !resend) continue;
      // A set the node has not seen (or may not have: the last send failed)
      // gets a new generation; a reconnected node is sent its set again as
      // it was.
      gen = same ? generations_[node] : std::max(generations_[node] + 1, absl::ToUnixMillis(clock_->Now()));
    }
    EncodedAssignment next = EncodeAssignment(specs, previous);
    std::vector<std::string> ids;
    ids.reserve(next.instances.size());
    for (const auto& e : next.instances) ids.push_back(e.first);
    const bool delivered =
        fleet_->SendAssignment(node, std::move(ids), EncodedAssignmentMessage(gen, next.instances));
    next.delivered = delivered;
    sent_[node] = std::move(next);
    if (!delivered) continue;  // sent again on reconnect
    sent.emplace_back(node, gen);
    absl::MutexLock lock(&mu_);
    generations_[node] = gen;
    resend_.erase(node);
  }
  if (!sent.empty()) {
    absl::Status s = store_->PutNodeGenerations(sent);
    if (!s.ok()) DCU_LOG_WARN("persisting ", sent.size(), " node generations: ", s.message());
  }
}

}  // namespace dcu::controller
