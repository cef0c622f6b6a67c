#include "controller/core/deploy_controller.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"

#include "absl/strings/numbers.h"
#include "absl/synchronization/notification.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/deployment_rules.h"
#include "common/enum_names.h"
#include "common/ids.h"
#include "common/input_rules.h"
#include "common/logging.h"
#include "common/units.h"
#include "google/protobuf/util/message_differencer.h"

namespace dcu::controller {

using dcufleet::v1::Attempt;
using dcufleet::v1::Deployment;
using dcufleet::v1::DeploymentPhase;
using dcufleet::v1::DeploymentSpec;
using dcufleet::v1::InstancePhase;
using dcufleet::v1::InstanceSpec;
using dcufleet::v1::InstanceStatus;
using dcufleet::v1::NodeView;

struct DeployController::StepContext {
  absl::Time now;
  int64_t now_ms = 0;
  // The fleet as of the pass start: immutable views shared with FleetState
  // (no copies), in name order, and what the scheduler reads of each.
  std::vector<std::shared_ptr<const NodeView>> views;
  std::vector<ScheduleNode> sched;
  std::shared_ptr<const absl::flat_hash_map<std::string, size_t>> index;
  std::vector<std::pair<std::string, int64_t>> shapes;
  // First node with a usable device, per (model, utilization, TP), valid while
  // the pass only takes devices (Release resets it).
  std::map<std::tuple<std::string, double, int>, size_t> first_usable;
  std::vector<Event> events;
  // Nodes whose desired instance set may have changed in this pass.
  std::set<std::string> touched;
  // The knowledge's answers within the pass, asked once per deployment shape
  // instead of once per deployment (plans per model and arch; memory plans
  // per model, limits, utilization, TP and device size). A recorded launch
  // outcome can change verdicts: it drops the plans.
  struct Plans {
    std::vector<dcufleet::v1::Plan> plans;
    std::vector<dcufleet::v1::Plan> excluded;
  };
  std::map<std::pair<std::string, std::string>, Plans> plans;
  std::map<std::string, MemoryCheck> memory;
  std::map<std::string, absl::StatusOr<ModelFacts>> models;

  const NodeView* Node(const std::string& name) const {
    auto it = index->find(name);
    return it == index->end() ? nullptr : views[it->second].get();
  }
  ScheduleNode* Sched(const std::string& name) {
    auto it = index->find(name);
    return it == index->end() ? nullptr : &sched[it->second];
  }
  // An attempt holds its devices and port.
  void Take(const dcufleet::v1::Placement& p) {
    ScheduleNode* n = Sched(p.node());
    if (!n) return;
    for (int i : p.device_indices()) n->busy_devices.insert(i);
    n->busy_ports.insert(p.port());
  }
  // An attempt ended in this pass: its devices are free again (its port stays
  // taken while the node still reports the instance).
  void Release(const dcufleet::v1::Placement& p) {
    ScheduleNode* n = Sched(p.node());
    if (!n) return;
    for (int i : p.device_indices()) n->busy_devices.erase(i);
    first_usable.clear();
  }
};

namespace {

bool AttemptActive(const Attempt& a) { return a.ended_at_ms() == 0; }

Attempt* ActiveAttempt(Deployment& d) {
  if (d.status().attempts().empty()) return nullptr;
  Attempt* a = d.mutable_status()->mutable_attempts(d.status().attempts_size() - 1);
  return AttemptActive(*a) ? a : nullptr;
}

const InstanceStatus* FindInstance(const NodeView& n, const std::string& id) {
  for (const auto& i : n.instances()) {
    if (i.instance_id() == id) return &i;
  }
  return nullptr;
}

std::string PhaseName(DeploymentPhase p) {
  std::string s = dcufleet::v1::DeploymentPhase_Name(p);
  return s.substr(std::string("DEPLOYMENT_").size());
}

std::string InstancePhaseName(InstancePhase p) {
  std::string s = dcufleet::v1::InstancePhase_Name(p);
  return s.rfind("INSTANCE_", 0) == 0 ? s.substr(9) : s;
}

}  // namespace

DeployController::DeployController(FleetState* fleet, Knowledge* knowledge, Diagnoser* diagnoser,
                                   DeploymentStore* store, EventLog* events,
                                   const common::Clock* clock, Options options)
    : fleet_(fleet),
      knowledge_(knowledge),
      diagnoser_(diagnoser),
      store_(store),
      events_(events),
      clock_(clock),
      options_(options) {
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
  for (auto& d : *ds) deployments_[d.spec().name()] = std::move(d);
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

  dcufleet::v1::DeployResponse resp;
  absl::Time now = clock_->Now();
  if (dry_run) {
    Deployment d;
    *d.mutable_spec() = spec;
    StepContext ctx;
    BuildContext(ctx);
    {
      absl::MutexLock lock(&mu_);
      for (auto& [name, other] : deployments_) {
        for (const auto& a : other.status().attempts()) {
          if (!AttemptActive(a) || other.status().deleted()) continue;
          ctx.Take(a.placement());
        }
      }
    }
    ScheduleResult r = Schedule(MakeScheduleInput(d, ctx));
    auto* st = d.mutable_status();
    for (const auto& p : r.plans) *st->add_plans() = p;
    for (const auto& p : r.excluded_plans) *st->add_excluded_plans() = p;
    for (const auto& rj : r.rejections) *st->add_rejections() = rj;
    if (r.placed) {
      Attempt* a = st->add_attempts();
      a->set_stack_id(r.plan.stack_id());
      a->set_runtime_kind(r.plan.runtime_kind());
      *a->mutable_placement() = r.placement;
      ModelPreparation prep = knowledge_->PrepareModel(spec.model(), *ctx.Node(r.placement.node()),
                                                       r.model_path, r.plan, r.placement.tp());
      for (const auto& f : prep.findings) *st->add_findings() = f;
      a->set_config_remediation(prep.remediation);
      auto launch = knowledge_->RenderLaunch(spec, r.plan, r.placement,
                                             prep.model_path.empty() ? r.model_path : prep.model_path);
      if (launch.ok()) *a->mutable_instance() = *launch;
      st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
      st->set_message(absl::StrCat("dry run: would launch ", r.plan.stack_id(), " on node '",
                                   r.placement.node(), "' devices [",
                                   absl::StrJoin(r.placement.device_indices(), ","), "] TP=",
                                   r.placement.tp()));
    } else {
      st->set_phase(dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
      st->set_message("dry run: nothing in the fleet fits");
    }
    *resp.mutable_deployment() = d;
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

std::vector<InstanceSpec> DeployController::AssignedTo(const std::string& node) const {
  absl::MutexLock lock(&mu_);
  std::vector<InstanceSpec> out;
  for (const auto& [n, d] : deployments_) {
    if (d.status().deleted() || d.status().attempts().empty()) continue;
    const Attempt& a = d.status().attempts(d.status().attempts_size() - 1);
    if (AttemptActive(a) && a.placement().node() == node) out.push_back(a.instance());
  }
  return out;
}

void DeployController::AddEvent(StepContext& ctx, const Deployment& d, const std::string& type,
                                const std::string& reason, const std::string& message) {
  ctx.events.push_back(Event{0, ctx.now_ms, "deployment", d.spec().name(), type, reason, message});
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
  in.plans_for_arch = [this, c, model_name](const std::string& arch, std::vector<dcufleet::v1::Plan>* p,
                                            std::vector<dcufleet::v1::Plan>* x) {
    auto [it, inserted] = c->plans.try_emplace({model_name, arch});
    if (inserted) knowledge_->PlansForArch(model_name, arch, &it->second.plans, &it->second.excluded);
    p->insert(p->end(), it->second.plans.begin(), it->second.plans.end());
    x->insert(x->end(), it->second.excluded.begin(), it->second.excluded.end());
  };
  const DeploymentSpec spec = d.spec();
  const std::string memory_key =
      absl::StrCat(spec.model(), "|", spec.max_model_len(), "|", spec.max_num_seqs(), "|",
                   spec.gpu_memory_utilization(), "|");
  in.memory = [this, c, spec, memory_key](int tp, int64_t total) {
    auto [it, inserted] = c->memory.try_emplace(absl::StrCat(memory_key, tp, "|", total));
    if (inserted) it->second = knowledge_->CheckMemory(spec, tp, total);
    return it->second;
  };
  in.model_path_on_node = [this, model_name](const NodeView& n) {
    return knowledge_->ModelPathOnNode(model_name, n);
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
  ctx.views = fleet_->Snapshot();
  // A node's scheduling summary is rebuilt only when FleetState published a
  // new view of it since the last pass; the name index only when the set of
  // nodes changed.
  absl::MutexLock lock(&cache_mu_);
  bool same_names = index_cache_ && index_cache_->size() == ctx.views.size();
  ctx.sched.reserve(ctx.views.size());
  if (node_cache_.size() != ctx.views.size()) node_cache_.resize(ctx.views.size());
  for (size_t i = 0; i < ctx.views.size(); ++i) {
    const auto& v = ctx.views[i];
    CachedNode& c = node_cache_[i];
    if (c.view != v) {
      if (!c.view || c.view->name() != v->name()) same_names = false;
      c.view = v;
      c.node = MakeScheduleNode(*v);
    }
    ctx.sched.push_back(c.node);
  }
  if (!same_names) {
    auto index = std::make_shared<absl::flat_hash_map<std::string, size_t>>();
    index->reserve(ctx.views.size());
    for (size_t i = 0; i < ctx.views.size(); ++i) (*index)[ctx.views[i]->name()] = i;
    index_cache_ = std::move(index);
  }
  ctx.index = index_cache_;
  // Few distinct shapes: a short list, not a set keyed by strings.
  for (const auto& n : ctx.sched) {
    if (!n.ready || n.arch.empty()) continue;
    bool known = false;
    for (const auto& [arch, total] : ctx.shapes) known |= total == n.device_total && arch == n.arch;
    if (!known) ctx.shapes.emplace_back(n.arch, n.device_total);
  }
}

bool DeployController::TryLaunch(Deployment& d, StepContext& ctx) {
  auto* st = d.mutable_status();
  ScheduleInput in = MakeScheduleInput(d, ctx);
  // A placed deployment keeps only the count of nodes passed over (naming
  // them costs string work per placement); an unschedulable one names them.
  in.max_rejections_placed = 0;
  ScheduleResult r = Schedule(in);
  if (d.spec().node().empty()) ctx.first_usable[CursorKey(d.spec())] = r.first_usable;
  st->clear_plans();
  st->clear_excluded_plans();
  for (const auto& p : r.plans) *st->add_plans() = p;
  for (const auto& p : r.excluded_plans) *st->add_excluded_plans() = p;
  if (!r.placed) {
    std::vector<std::string> lines;
    for (const auto& rj : r.rejections) lines.push_back(absl::StrCat(rj.node(), ": ", rj.reason()));
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
  const NodeView& node = *ctx.Node(r.placement.node());
  ModelPreparation prep =
      knowledge_->PrepareModel(d.spec().model(), node, r.model_path, r.plan, r.placement.tp());
  st->clear_findings();
  for (const auto& f : prep.findings) *st->add_findings() = f;
  if (!prep.blocking_reason.empty()) {
    st->set_phase(dcufleet::v1::DEPLOYMENT_FAILED);
    st->set_message(prep.blocking_reason);
    AddEvent(ctx, d, "Warning", "ModelUnusable", prep.blocking_reason);
    return true;
  }
  std::string model_path = prep.model_path.empty() ? r.model_path : prep.model_path;
  auto launch = knowledge_->RenderLaunch(d.spec(), r.plan, r.placement, model_path);
  if (!launch.ok()) {
    st->set_phase(dcufleet::v1::DEPLOYMENT_FAILED);
    st->set_message(absl::StrCat("cannot render the launch of stack '", r.plan.stack_id(),
                                 "': ", launch.status().message()));
    AddEvent(ctx, d, "Warning", "RenderFailed", st->message());
    return true;
  }
  InstanceSpec spec = *launch;
  int number = st->attempts_size() + 1;
  spec.set_instance_id(absl::StrCat(d.spec().name(), "-", number, "-",
                                    common::NewId("i").substr(2, 6)));
  spec.set_deployment(d.spec().name());
  spec.set_model(d.spec().model());
  spec.set_attempt(number);
  spec.set_port(r.placement.port());
  spec.clear_device_indices();
  for (int i : r.placement.device_indices()) spec.add_device_indices(i);
  spec.set_startup_timeout_s(d.spec().startup_timeout_s());
  if (spec.served_model_name().empty()) spec.set_served_model_name(d.spec().served_model_name());
  if (!prep.overlay_dir.empty()) {
    // The engine is given the overlay (argv); the agent builds it from the
    // user's directory, which stays the instance's model_path.
    spec.set_overlay_dir(prep.overlay_dir);
    spec.set_overlay_config_json(prep.overlay_config_json);
    spec.set_overlay_source_dir(r.model_path);
    spec.set_model_path(r.model_path);
  }
  for (const auto& a : prep.extra_args) spec.add_argv(a);
  // Remediations learned from earlier attempts.
  for (const auto& [k, v] : st->extra_env()) (*spec.mutable_env())[k] = v;
  for (const auto& a : st->extra_args()) spec.add_argv(a);
  if (!st->ld_library_path_prefix().empty()) {
    std::vector<std::string> prefixes(st->ld_library_path_prefix().begin(),
                                      st->ld_library_path_prefix().end());
    for (const auto& p : spec.ld_library_path_prefix()) {
      if (std::find(prefixes.begin(), prefixes.end(), p) == prefixes.end()) prefixes.push_back(p);
    }
    spec.clear_ld_library_path_prefix();
    for (const auto& p : prefixes) spec.add_ld_library_path_prefix(p);
  }

  Attempt* a = st->add_attempts();
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
  *a->mutable_instance() = spec;
  ctx.Take(r.placement);
  ctx.touched.insert(r.placement.node());

  for (size_t i = 0; i < r.plans.size(); ++i) {
    if (r.plans[i].stack_id() == r.plan.stack_id()) st->set_current_plan(static_cast<int>(i));
  }
  st->set_phase(dcufleet::v1::DEPLOYMENT_LAUNCHING);
  st->set_message(absl::StrCat("attempt ", number, ": ", r.plan.stack_id(), " on '",
                               r.placement.node(), "'"));
  if (!prep.findings.empty()) {
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

bool DeployController::StepActiveAttempt(Deployment& d, Attempt& a, StepContext& ctx) {
  auto* st = d.mutable_status();
  const NodeView* found = ctx.Node(a.placement().node());
  if (!found || found->state() == dcufleet::v1::NODE_LOST) {
    a.set_ended_at_ms(ctx.now_ms);
    a.set_phase(dcufleet::v1::INSTANCE_FAILED);
    a.set_message(absl::StrCat("node '", a.placement().node(), "' lost"));
    st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
    st->set_ready_at_ms(0);
    st->set_endpoint("");
    st->set_message(absl::StrCat("rescheduling: node '", a.placement().node(), "' lost"));
    st->set_next_attempt_at_ms(0);
    AddEvent(ctx, d, "Warning", "NodeLost",
             absl::StrCat("node '", a.placement().node(), "' lost; rescheduling elsewhere"));
    return true;
  }
  const NodeView& node = *found;
  const InstanceStatus* is = FindInstance(node, a.instance_id());
  if (!is) {
    // Not reported yet. The agent reports failures itself; only when the node
    // is silent about it well past the start-up deadline does the controller
    // give up on the attempt.
    int64_t deadline = a.created_at_ms() + d.spec().startup_timeout_s() * 1000LL +
                       absl::ToInt64Milliseconds(options_.report_grace);
    if (node.state() == dcufleet::v1::NODE_READY && ctx.now_ms > deadline) {
      a.set_ended_at_ms(ctx.now_ms);
      a.set_phase(dcufleet::v1::INSTANCE_FAILED);
      a.set_message("the agent never reported the instance");
      HandleFailure(d, a, ctx);
      return true;
    }
    return false;
  }
  bool changed = false;
  if (a.phase() != is->phase()) {
    InstancePhase old = a.phase();
    a.set_phase(is->phase());
    changed = true;
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
    changed = true;
    if (is->shards_total() > 0 &&
        (is->shards_loaded() == is->shards_total() || is->shards_loaded() % 4 == 1)) {
      AddEvent(ctx, d, "Normal", "Loading",
               absl::StrCat("loading safetensors shards ", is->shards_loaded(), "/",
                            is->shards_total()));
    }
  }
  if (is->message() != a.message()) {
    a.set_message(is->message());
    changed = true;
  }
  if (is->phase() == dcufleet::v1::INSTANCE_READY && st->phase() != dcufleet::v1::DEPLOYMENT_READY) {
    a.set_ready_at_ms(is->ready_at_ms() ? is->ready_at_ms() : ctx.now_ms);
    st->set_phase(dcufleet::v1::DEPLOYMENT_READY);
    st->set_ready_at_ms(ctx.now_ms);
    st->set_endpoint(absl::StrCat(node.name(), ":", a.placement().port()));
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
    knowledge_->RecordOutcome(rec);
    ctx.plans.clear();
    return true;
  }
  if (is->phase() == dcufleet::v1::INSTANCE_FAILED) {
    a.set_ended_at_ms(ctx.now_ms);
    a.set_exit_code(is->exit_code());
    a.clear_log_tail();
    for (const auto& l : is->log_tail()) a.add_log_tail(l);
    HandleFailure(d, a, ctx);
    return true;
  }
  return changed;
}

void DeployController::HandleFailure(Deployment& d, Attempt& a, StepContext& ctx) {
  auto* st = d.mutable_status();
  st->set_ready_at_ms(0);
  st->set_endpoint("");
  std::vector<std::string> tail(a.log_tail().begin(), a.log_tail().end());
  // A launch that failed before printing anything: its message is the log.
  if (tail.empty() && !a.message().empty()) tail.push_back(a.message());
  std::vector<dcufleet::v1::AttemptFinding> findings;
  int64_t device_total = 0;
  if (const NodeView* nv = ctx.Node(a.placement().node());
      nv && !a.placement().device_indices().empty()) {
    for (const auto& dev : nv->inventory().devices()) {
      if (dev.index() == a.placement().device_indices(0)) device_total = dev.total().bytes();
    }
  }
  if (diagnoser_ && !tail.empty()) {
    findings = diagnoser_->Diagnose(tail, knowledge_->DiagnosisFacts(d.spec(), a, device_total));
  }
  a.clear_findings();
  for (const auto& f : findings) *a.add_findings() = f;
  std::string top = findings.empty() ? "unknown" : findings.front().failure_class();
  AddEvent(ctx, d, "Warning", "Failed",
           absl::StrCat("attempt ", a.number(), " (", a.stack_id(), ") failed",
                        a.exit_code() ? absl::StrCat(" with exit code ", a.exit_code()) : "",
                        ": ", top,
                        findings.empty() || findings.front().evidence().empty()
                            ? (a.message().empty() ? "" : absl::StrCat(" — ", a.message()))
                            : absl::StrCat(" — ", findings.front().evidence(0))));

  // Pick the first finding whose remediation has not been applied yet: when
  // two causes are stacked, fixing the first lets the second surface.
  const dcufleet::v1::AttemptFinding* chosen = nullptr;
  std::string chosen_key;
  for (const auto& f : findings) {
    std::string key = absl::StrCat(f.failure_class(), ":", f.remediation_action());
    for (const auto& [k, v] : f.params()) absl::StrAppend(&key, ":", k, "=", v);
    bool applied = std::find(st->applied_remediations().begin(), st->applied_remediations().end(),
                             key) != st->applied_remediations().end();
    if (f.remediation_kind() == "auto" && applied) continue;
    chosen = &f;
    chosen_key = key;
    break;
  }

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

  auto failover = [&](const std::string& why, const std::string& mark_broken = "stack_arch") {
    st->add_failed_stacks(a.stack_id());
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
      if (x.stack_id() == a.stack_id() && x.ended_at_ms() != 0 && x.ready_at_ms() == 0) ++failures_on_plan;
    }
    if (failures_on_plan >= d.spec().max_attempts_per_plan()) {
      failover(absl::StrCat(failures_on_plan, " failed attempts (last: ", why, ")"));
      rec.scope = "stack_arch_model";
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

  if (chosen && chosen->failure_class() == "unknown") {
    // Nothing recognised (a kill, a crash without a message): transient until
    // proven otherwise — back off, and fail over after max attempts.
    chosen = nullptr;
  }
  if (!chosen) {
    retry_with_backoff(findings.empty() ? (a.message().empty() ? "no diagnosis" : a.message())
                                        : absl::StrCat(top, ", remediation already applied"));
  } else if (chosen->remediation_kind() == "failover") {
    auto mb = chosen->params().find("mark_broken");
    failover(chosen->failure_class(), mb == chosen->params().end() ? "stack_arch" : mb->second);
  } else if (chosen->remediation_kind() == "human") {
    st->set_phase(dcufleet::v1::DEPLOYMENT_FAILED);
    st->set_message(absl::StrCat(chosen->failure_class(), ": ", chosen->remediation_action(),
                                 chosen->remediation_detail().empty()
                                     ? ""
                                     : absl::StrCat(" — ", chosen->remediation_detail())));
    AddEvent(ctx, d, "Warning", "NeedsHuman", st->message());
  } else if (chosen->remediation_kind() == "auto") {
    const std::string& action = chosen->remediation_action();
    const auto& params = chosen->params();
    std::string applied;
    bool retry_now = true;
    if (action == "set_env") {
      for (const auto& [k, v] : params) {
        (*st->mutable_extra_env())[k] = v;
        applied += absl::StrCat(applied.empty() ? "" : " ", k, "=", v);
      }
      applied = absl::StrCat("env ", applied);
    } else if (action == "prepend_ld_library_path") {
      std::vector<std::string> paths;
      auto it = params.find("paths");
      if (it != params.end()) paths = absl::StrSplit(it->second, ':', absl::SkipEmpty());
      std::vector<std::string> merged = paths;
      for (const auto& p : st->ld_library_path_prefix()) {
        if (std::find(merged.begin(), merged.end(), p) == merged.end()) merged.push_back(p);
      }
      st->clear_ld_library_path_prefix();
      for (const auto& p : merged) st->add_ld_library_path_prefix(p);
      applied = absl::StrCat("LD_LIBRARY_PATH order ", absl::StrJoin(paths, ":"));
    } else if (action == "add_arg") {
      auto arg = params.find("flag");
      if (arg == params.end()) arg = params.find("arg");
      auto val = params.find("value");
      std::string value = val == params.end() ? "" : val->second;
      if (value == "{kv_cache_bytes}" || value.empty() || value.find("${") != std::string::npos) {
        int64_t total = 0;
        const NodeView* nv = ctx.Node(a.placement().node());
        if (nv && !a.placement().device_indices().empty()) {
          for (const auto& dev : nv->inventory().devices()) {
            if (dev.index() == a.placement().device_indices(0)) total = dev.total().bytes();
          }
        }
        value = absl::StrCat(knowledge_->KvCacheBytes(d.spec(), a.placement().tp(), total));
      }
      if (arg != params.end()) {
        st->add_extra_args(arg->second);
        if (!value.empty()) st->add_extra_args(value);
        applied = absl::StrCat(arg->second, value.empty() ? "" : " ", value);
      }
    } else if (action == "reap_or_move_devices") {
      for (int i : a.placement().device_indices()) {
        st->add_avoided_devices(absl::StrCat(a.placement().node(), "/", i));
      }
      applied = absl::StrCat("avoid devices [", absl::StrJoin(a.placement().device_indices(), ","),
                             "] on '", a.placement().node(), "' (device view below the start-up rule)");
    } else if (action == "change_port") {
      st->add_avoided_ports(a.placement().port());
      applied = absl::StrCat("avoid port ", a.placement().port());
    } else if (action == "change_tp") {
      applied = "choose a TP that divides the heads";
      d.mutable_spec()->set_tp(0);
    } else if (action == "move_to_node_with_model") {
      const NodeView* nv = ctx.Node(a.placement().node());
      if (nv) {
        for (const auto& dev : nv->inventory().devices()) {
          st->add_avoided_devices(absl::StrCat(a.placement().node(), "/", dev.index()));
        }
      }
      applied = absl::StrCat("avoid node '", a.placement().node(), "' (model not usable there)");
    } else if (action == "reduce_max_model_len") {
      auto v = params.find("max_model_len");
      int64_t len = 0;
      if (v != params.end() && absl::SimpleAtoi(v->second, &len) && len >= 16 &&
          len < d.spec().max_model_len()) {
        d.mutable_spec()->set_max_model_len(len);
        applied = absl::StrCat("max_model_len ", len);
      } else {
        d.mutable_spec()->set_max_model_len(std::max<int64_t>(16, d.spec().max_model_len() / 2));
        applied = absl::StrCat("max_model_len halved to ", d.spec().max_model_len());
      }
    } else {
      retry_now = false;
    }
    if (retry_now) {
      st->add_applied_remediations(chosen_key);
      st->set_phase(dcufleet::v1::DEPLOYMENT_PENDING);
      st->set_next_attempt_at_ms(0);
      st->set_message(absl::StrCat("retrying with remediation for ", chosen->failure_class(), ": ",
                                   applied));
      rec.scope = "remediable";
      AddEvent(ctx, d, "Normal", "Remediated",
               absl::StrCat(chosen->failure_class(), " → ", applied, "; retrying now"));
    } else {
      retry_with_backoff(absl::StrCat(chosen->failure_class(), " (", action, ")"));
    }
  } else {
    retry_with_backoff(top);
  }
  knowledge_->RecordOutcome(rec);
  ctx.plans.clear();
}

bool DeployController::Step(Deployment& d, StepContext& ctx) {
  auto* st = d.mutable_status();
  Attempt* a = ActiveAttempt(d);
  if (st->deleted()) {
    if (a) {
      const NodeView* nv = ctx.Node(a->placement().node());
      const InstanceStatus* is = nv ? FindInstance(*nv, a->instance_id()) : nullptr;
      bool still_reported = nv && nv->state() != dcufleet::v1::NODE_LOST && is != nullptr &&
                            is->phase() != dcufleet::v1::INSTANCE_STOPPED;
      if (still_reported) return false;
      a->set_ended_at_ms(ctx.now_ms);
      a->set_phase(dcufleet::v1::INSTANCE_STOPPED);
      ctx.Release(a->placement());
      ctx.touched.insert(a->placement().node());
      return true;
    }
    return false;
  }
  if (a) {
    if (!StepActiveAttempt(d, *a, ctx)) return false;
    if (AttemptActive(*a)) return true;
    // The attempt ended: its devices are free, and when the next attempt may
    // start now (a failover or a remediation, no back-off) it starts in this
    // pass rather than the next one.
    ctx.Release(a->placement());
    ctx.touched.insert(a->placement().node());
    if (st->phase() == dcufleet::v1::DEPLOYMENT_PENDING && st->next_attempt_at_ms() <= ctx.now_ms) {
      TryLaunch(d, ctx);
    }
    return true;
  }
  if (st->phase() == dcufleet::v1::DEPLOYMENT_FAILED ||
      st->phase() == dcufleet::v1::DEPLOYMENT_READY) {
    return false;
  }
  if (st->next_attempt_at_ms() > ctx.now_ms) return false;
  return TryLaunch(d, ctx);
}

bool DeployController::NeedsStep(const Deployment& d, const StepContext& ctx) const {
  // Mirrors Step(): false only when Step() would change nothing, so the pass
  // copies and steps just the deployments something happened to.
  const auto& st = d.status();
  const Attempt* a = nullptr;
  if (!st.attempts().empty() && AttemptActive(st.attempts(st.attempts_size() - 1))) {
    a = &st.attempts(st.attempts_size() - 1);
  }
  if (st.deleted()) return a != nullptr;
  if (!a) {
    if (st.phase() == dcufleet::v1::DEPLOYMENT_FAILED || st.phase() == dcufleet::v1::DEPLOYMENT_READY) {
      return false;
    }
    return st.next_attempt_at_ms() <= ctx.now_ms;
  }
  const NodeView* node = ctx.Node(a->placement().node());
  if (!node || node->state() == dcufleet::v1::NODE_LOST) return true;
  const InstanceStatus* is = FindInstance(*node, a->instance_id());
  if (!is) {
    int64_t deadline = a->created_at_ms() + d.spec().startup_timeout_s() * 1000LL +
                       absl::ToInt64Milliseconds(options_.report_grace);
    return node->state() == dcufleet::v1::NODE_READY && ctx.now_ms > deadline;
  }
  if (a->phase() != is->phase() || a->shards_loaded() != is->shards_loaded() ||
      a->shards_total() != is->shards_total() || is->message() != a->message()) {
    return true;
  }
  if (is->phase() == dcufleet::v1::INSTANCE_READY && st.phase() != dcufleet::v1::DEPLOYMENT_READY) {
    return true;
  }
  return is->phase() == dcufleet::v1::INSTANCE_FAILED;
}

void DeployController::ReconcileOnce() {
  absl::MutexLock pass(&reconcile_mu_);
  const absl::Time t0 = absl::Now();
  StepContext ctx;
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
  // the devices and ports of every active attempt are taken first.
  std::vector<Deployment> work;
  std::vector<std::string> removed;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, d] : deployments_) {
      if (d.status().deleted()) continue;
      for (const auto& a : d.status().attempts()) {
        if (AttemptActive(a)) ctx.Take(a.placement());
      }
    }
    for (const auto& [name, d] : deployments_) {
      if (NeedsStep(d, ctx)) {
        work.push_back(d);
      } else if (d.status().deleted()) {
        removed.push_back(name);
      }
    }
  }

  const absl::Time t_select = absl::Now();
  std::vector<Deployment> changed;
  for (auto& d : work) {
    bool stepped = Step(d, ctx);
    if (d.status().deleted() && !ActiveAttempt(d)) removed.push_back(d.spec().name());
    if (stepped) {
      d.set_revision(d.revision() + 1);
      d.mutable_status()->set_updated_at_ms(ctx.now_ms);
      changed.push_back(std::move(d));
    }
  }

  const absl::Time t_step = absl::Now();
  // Intent first: persist, then publish to memory, then tell the nodes.
  absl::Status s = store_->PutDeployments(changed);
  const absl::Time t_persist = absl::Now();
  if (!s.ok()) {
    DCU_LOG_ERROR("persisting ", changed.size(), " deployments: ", s.message(),
                  "; will retry");
    absl::MutexLock lock(&mu_);
    dirty_ = true;
    return;
  }
  for (const auto& name : removed) {
    absl::Status ds = store_->DeleteDeployment(name);
    if (!ds.ok()) DCU_LOG_WARN("deleting deployment '", name, "': ", ds.message());
    ctx.events.push_back(Event{0, ctx.now_ms, "deployment", name, "Normal", "Deleted",
                               "all instances stopped"});
  }
  std::map<std::string, std::vector<InstanceSpec>> desired;
  {
    absl::MutexLock lock(&mu_);
    for (auto& d : changed) {
      auto it = deployments_.find(d.spec().name());
      // A concurrent Delete or Deploy wins; the next pass sees it.
      if (it == deployments_.end() || it->second.revision() != d.revision() - 1) {
        dirty_ = true;
        continue;
      }
      // Nodes of the attempts before and after: their desired sets change.
      for (const auto& a : it->second.status().attempts()) ctx.touched.insert(a.placement().node());
      for (const auto& a : d.status().attempts()) ctx.touched.insert(a.placement().node());
      it->second = std::move(d);
    }
    for (const auto& name : removed) {
      auto it = deployments_.find(name);
      if (it == deployments_.end()) continue;
      for (const auto& a : it->second.status().attempts()) ctx.touched.insert(a.placement().node());
      deployments_.erase(it);
    }
    for (const auto& n : resend_) ctx.touched.insert(n);
    for (const auto& n : recompute_) ctx.touched.insert(n);
    recompute_.clear();
    // Only the nodes whose set may have changed (or that reconnected) are
    // recomputed and compared with what they were last sent.
    for (const auto& n : ctx.touched) {
      if (ctx.Node(n)) desired[n];
    }
    if (!desired.empty()) {
      for (const auto& [name, d] : deployments_) {
        if (d.status().deleted() || d.status().attempts().empty()) continue;
        const Attempt& a = d.status().attempts(d.status().attempts_size() - 1);
        if (!AttemptActive(a)) continue;
        auto it = desired.find(a.placement().node());
        if (it != desired.end()) it->second.push_back(a.instance());
      }
    }
  }
  const absl::Time t_desired = absl::Now();
  if (events_ && !ctx.events.empty()) {
    absl::Status es = events_->AppendEvents(ctx.events);
    if (!es.ok()) DCU_LOG_WARN("appending ", ctx.events.size(), " events: ", es.message());
  }
  for (const auto& e : ctx.events) {
    DCU_LOG_INFO("deployment '", e.subject, "' ", e.reason, ": ", e.message);
  }
  const absl::Time t_events = absl::Now();
  PushAssignments(desired);
  const absl::Time t_end = absl::Now();
  auto ms = [](absl::Duration d) { return absl::StrFormat("%.1f", absl::ToDoubleMilliseconds(d)); };
  DCU_LOG_DEBUG("reconcile pass: ", ctx.views.size(), " nodes, ", work.size(), " stepped, ",
                changed.size(), " changed, ", desired.size(), " nodes pushed in ", ms(t_end - t0),
                " ms (context ", ms(t_context - t0), ", observe ", ms(t_observe - t_context),
                ", select ", ms(t_select - t_observe), ", step ",
                ms(t_step - t_select), ", persist ", ms(t_persist - t_step), ", desired ",
                ms(t_desired - t_persist), ", events ", ms(t_events - t_desired), ", push ",
                ms(t_end - t_events), ")");
}

void DeployController::PushAssignments(
    const std::map<std::string, std::vector<InstanceSpec>>& desired) {
  std::vector<std::pair<std::string, int64_t>> sent;
  for (const auto& [node, specs] : desired) {
    std::string key;
    for (const auto& s : specs) key += s.SerializeAsString();
    int64_t gen = 0;
    {
      absl::MutexLock lock(&mu_);
      auto it = last_sent_.find(node);
      bool resend = resend_.count(node) > 0;
      if (it != last_sent_.end() && it->second == key && !resend) continue;
      if (it == last_sent_.end() || it->second != key) {
        gen = std::max(generations_[node] + 1, absl::ToUnixMillis(clock_->Now()));
      } else {
        gen = generations_[node];
      }
    }
    dcufleet::v1::ControllerMessage msg;
    msg.mutable_assignment()->set_generation(gen);
    for (const auto& s : specs) *msg.mutable_assignment()->add_instances() = s;
    if (!fleet_->SendToNode(node, msg)) continue;  // sent again on reconnect
    sent.emplace_back(node, gen);
    absl::MutexLock lock(&mu_);
    generations_[node] = gen;
    last_sent_[node] = std::move(key);
    resend_.erase(node);
  }
  if (!sent.empty()) {
    absl::Status s = store_->PutNodeGenerations(sent);
    if (!s.ok()) DCU_LOG_WARN("persisting ", sent.size(), " node generations: ", s.message());
  }
}

}  // namespace dcu::controller
