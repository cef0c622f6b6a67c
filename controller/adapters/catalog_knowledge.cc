#include "controller/adapters/catalog_knowledge.h"

#include "modelkit/learned_fix.h"

#include <algorithm>
#include <optional>

#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/units.h"
#include "controller/core/launch_planner.h"
#include "modelkit/argv_template.h"
#include "modelkit/config_audit.h"
#include "modelkit/diagnosis/context_condition.h"
#include "modelkit/weights_audit.h"
#include "modelkit/discovery.h"
#include "modelkit/memory_plan.h"
#include "modelkit/remediation.h"
#include "modelkit/stack_view.h"
#include "modelkit/verdict.h"

namespace dcu::controller {
namespace {

using modelkit::AuditConfigText;
using modelkit::AuditOptions;
using modelkit::FindCatalogModel;
using modelkit::HasErrors;
using modelkit::MatchEnvironment;
using modelkit::ModelShape;
using modelkit::PlanConfigRemediation;
using modelkit::PlanMemory;
using modelkit::RemediationOptions;
using modelkit::RenderArgv;
using modelkit::ShapeFromCatalog;
using dcufleet::v1::Plan;
using dcufleet::v1::Stack;

bool StackCoversArch(const Stack& s, const std::string& arch,
                     const std::vector<dcufleet::v1::Evidence>& evidence) {
  if (std::find(s.arches().begin(), s.arches().end(), arch) != s.arches().end()) return true;
  for (const auto& r : s.arch_recipes()) {
    if (r.arch() == arch) return true;
  }
  for (const auto& e : evidence) {
    if (e.stack_id() == s.id() && e.arch() == arch) return true;
  }
  return false;
}

const dcufleet::v1::ArchRecipe* RecipeFor(const Stack& s, const std::string& arch) {
  for (const auto& r : s.arch_recipes()) {
    if (r.arch() == arch) return &r;
  }
  return nullptr;
}

dcufleet::v1::FailureScope ScopeFromName(const std::string& s) {
  if (s == "stack_arch") return dcufleet::v1::SCOPE_STACK_ARCH;
  if (s == "stack_arch_model" || s == "stack_model") return dcufleet::v1::SCOPE_STACK_ARCH_MODEL;
  if (s == "remediable") return dcufleet::v1::SCOPE_REMEDIABLE;
  if (s == "node_state" || s == "stack_node") return dcufleet::v1::SCOPE_NODE_STATE;
  if (s == "model_config") return dcufleet::v1::SCOPE_MODEL_CONFIG;
  return dcufleet::v1::FAILURE_SCOPE_UNSPECIFIED;
}

bool IsNvidiaArch(const std::string& arch) { return absl::StartsWith(arch, "sm_"); }

}  // namespace

CatalogKnowledge::CatalogKnowledge(CatalogStore* store, const common::Clock* clock)
    : store_(store), clock_(clock) {}

void CatalogKnowledge::Invalidate() {
  absl::MutexLock lock(&mu_);
  cache_ = nullptr;
  evidence_valid_ = false;
  evidence_ids_.clear();
  verdicts_.clear();
  tallies_.clear();
  dir_matches_.clear();
  preparations_.clear();
  audits_.clear();
}

std::shared_ptr<const CatalogKnowledge::Snapshot> CatalogKnowledge::Load() {
  absl::Time now = clock_->Now();
  {
    absl::MutexLock lock(&mu_);
    if (cache_ && now - loaded_at_ < absl::Seconds(2)) return cache_;
  }
  auto snap = std::make_shared<Snapshot>();
  auto stacks = store_->ListStacks();
  if (stacks.ok()) snap->stacks = std::move(*stacks);
  auto models = store_->ListModels();
  if (models.ok()) snap->models = std::move(*models);
  if (!stacks.ok() || !models.ok()) {
    DCU_LOG_WARN("reading the catalog: ",
                 !stacks.ok() ? stacks.status().message() : models.status().message());
  }
  for (size_t i = 0; i < snap->stacks.size(); ++i) snap->stack_index[snap->stacks[i].id()] = i;
  for (size_t i = 0; i < snap->models.size(); ++i) snap->model_index[snap->models[i].name()] = i;
  snap->audit.models = snap->models;
  absl::MutexLock lock(&mu_);
  // What was derived from the old stacks and models goes with them.
  dir_matches_.clear();
  preparations_.clear();
  verdicts_.clear();
  cache_ = std::move(snap);
  loaded_at_ = now;
  return cache_;
}

void CatalogKnowledge::LoadEvidenceLocked() {
  absl::Time now = clock_->Now();
  if (evidence_valid_ && now - evidence_loaded_at_ < absl::Seconds(10)) return;
  const bool full = !evidence_valid_ || now - evidence_full_at_ >= kEvidenceFullReadEvery;
  // In full: every row, from the store's first. Otherwise only the rows
  // recorded since the last read (this controller's own are in memory from
  // RecordOutcome already and are skipped by id).
  int64_t seq = full ? 0 : evidence_seq_;
  auto ev = store_->ListEvidenceRecordedAfter(&seq);
  if (!ev.ok()) {
    DCU_LOG_WARN("reading the catalog's evidence: ", ev.status().message());
    return;
  }
  if (full) {
    evidence_.clear();
    evidence_ids_.clear();
    verdicts_.clear();
    tallies_.clear();
  }
  for (auto& e : *ev) AddEvidenceLocked(std::move(e));
  // Recorded but not written yet: still part of what is known.
  if (full) {
    for (const auto& e : pending_evidence_) AddEvidenceLocked(e);
    evidence_full_at_ = now;
  }
  evidence_seq_ = seq;
  evidence_valid_ = true;
  evidence_loaded_at_ = now;
}

void CatalogKnowledge::AddEvidenceLocked(dcufleet::v1::Evidence e) {
  if (!evidence_ids_.insert(e.evidence_id()).second) return;  // known already
  EvidenceKey key(e.stack_id(), e.arch());
  verdicts_.erase(key);
  auto t = tallies_.find(key);
  if (t != tallies_.end()) {
    // Older than the key's newest row (another writer's clock, or this
    // one's stepped back): folded again, sorted, when next asked for.
    if (t->second.verdicts.Add(e)) {
      t->second.fix.Add(e);
    } else {
      tallies_.erase(t);
    }
  }
  evidence_[key].push_back(std::move(e));
}

CatalogKnowledge::KeyTally& CatalogKnowledge::TallyLocked(const EvidenceKey& key) {
  auto it = tallies_.find(key);
  if (it != tallies_.end()) return it->second;
  it = tallies_.try_emplace(key, key.first, key.second).first;
  auto ev = evidence_.find(key);
  if (ev == evidence_.end()) return it->second;
  // Sorted by time (stably: one millisecond's rows in the order recorded)
  // in case a clock stepped back.
  for (const auto* e : modelkit::RowsInTimeOrder(ev->second, key.first, key.second)) {
    it->second.verdicts.Add(*e);
    it->second.fix.Add(*e);
  }
  return it->second;
}

absl::StatusOr<ModelFacts> CatalogKnowledge::Model(const std::string& model) {
  // Asked on gRPC threads (Deploy): an older snapshot will do rather than a
  // reload that waits on the database; the reconcile pass keeps it fresh.
  std::shared_ptr<const Snapshot> snap;
  {
    absl::MutexLock lock(&mu_);
    snap = cache_;
  }
  if (!snap) snap = Load();
  const dcufleet::v1::ModelEntry* cached = snap->Model(model);
  absl::StatusOr<dcufleet::v1::ModelEntry> entry =
      cached ? absl::StatusOr<dcufleet::v1::ModelEntry>(*cached) : store_->GetModel(model);
  if (!entry.ok()) {
    if (entry.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("model '", model,
                                              "' is not in the catalog; list known models with "
                                              "'dcuctl get models' or import one with 'dcuctl "
                                              "stack import FILE'"));
    }
    return entry.status();
  }
  ModelShape shape = ShapeFromCatalog(*entry);
  ModelFacts f;
  f.name = entry->name();
  f.weight_bytes = entry->weight_bytes();
  f.num_attention_heads = shape.num_attention_heads;
  f.num_key_value_heads = shape.num_kv_heads;
  f.valid_tp = shape.ValidTp(64);
  f.hf_repo = entry->hf_repo();
  return f;
}

void CatalogKnowledge::PlansForArch(const std::string& model, const std::string& arch,
                                    std::vector<Plan>* plans, std::vector<Plan>* excluded) {
  auto snap = Load();
  struct Ranked {
    int group;
    Plan plan;
  };
  std::vector<Ranked> ranked;
  const int64_t now_ms = absl::ToUnixMillis(clock_->Now());
  absl::MutexLock lock(&mu_);
  LoadEvidenceLocked();
  static const std::vector<dcufleet::v1::Evidence> kNoEvidence;
  for (const Stack& s : snap->stacks) {
    // Verdicts read only the (stack, arch) rows: they get just those.
    EvidenceKey key(s.id(), arch);
    auto ev_it = evidence_.find(key);
    const auto& evidence = ev_it == evidence_.end() ? kNoEvidence : ev_it->second;
    if (!StackCoversArch(s, arch, evidence)) continue;
    Plan p;
    p.set_stack_id(s.id());
    p.set_runtime_kind(s.runtime_kind());
    p.set_runtime_location(s.runtime_location());
    p.set_arch(arch);
    auto [vit, fresh] = verdicts_[key].try_emplace(model);
    if (fresh) {
      const KeyTally& tally = TallyLocked(key);
      vit->second = {tally.verdicts.Model(model), tally.verdicts.StackArch()};
    }
    const dcufleet::v1::Verdict& mv = vit->second.first;
    const dcufleet::v1::Verdict& av = vit->second.second;
    if (mv.state() == dcufleet::v1::VERDICT_BROKEN) {
      // Evidence that cannot poison the matrix (issue 15): one node's word
      // demotes a stack, it does not exclude it fleet-wide; and a broken
      // verdict is re-qualified once it is old enough: the plan is tried
      // again, after every other plan. A failure then renews the verdict.
      const bool one_node = !mv.only_node().empty();
      const bool requalify = now_ms - mv.last_at_ms() >= absl::ToInt64Milliseconds(requalify_after_);
      if (!one_node && !requalify) {
        p.set_verdict(dcufleet::v1::VERDICT_BROKEN);
        p.set_excluded_reason(mv.reason());
        excluded->push_back(p);
        continue;
      }
      p.set_verdict(dcufleet::v1::VERDICT_UNTESTED);
      p.set_verdict_reason(absl::StrCat(
          mv.reason(), requalify ? "; re-qualifying: tried once more, after the other plans"
                                 : "; demoted: tried after the other plans"));
      ranked.push_back({4, p});
      continue;
    }
    bool verified = mv.state() == dcufleet::v1::VERDICT_WORKS || av.state() == dcufleet::v1::VERDICT_WORKS;
    p.set_verdict(verified ? dcufleet::v1::VERDICT_WORKS : dcufleet::v1::VERDICT_UNTESTED);
    p.set_verdict_reason(mv.state() == dcufleet::v1::VERDICT_WORKS ? mv.reason() : av.reason());
    // Verified bare, verified container, untested bare, untested container.
    int group = (verified ? 0 : 2) + (s.runtime_kind() == dcufleet::v1::RUNTIME_CONTAINER ? 1 : 0);
    ranked.push_back({group, p});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.group != b.group) return a.group < b.group;
    return a.plan.stack_id() < b.plan.stack_id();
  });
  for (size_t i = 0; i < ranked.size(); ++i) {
    ranked[i].plan.set_rank(static_cast<int>(i) + 1);
    plans->push_back(ranked[i].plan);
  }
}

MemoryCheck CatalogKnowledge::CheckMemory(const dcufleet::v1::DeploymentSpec& spec, int tp,
                                          int64_t device_total) {
  MemoryCheck m;
  auto snap = Load();
  const dcufleet::v1::ModelEntry* cached = snap->Model(spec.model());
  absl::StatusOr<dcufleet::v1::ModelEntry> entry =
      cached ? absl::StatusOr<dcufleet::v1::ModelEntry>(*cached) : store_->GetModel(spec.model());
  if (!entry.ok()) {
    m.reason = std::string(entry.status().message());
    return m;
  }
  dcufleet::v1::MemoryPlanRequest req;
  req.set_model(spec.model());
  req.set_tp(tp);
  req.set_max_model_len(spec.max_model_len());
  req.set_max_num_seqs(spec.max_num_seqs());
  req.set_gpu_memory_utilization(spec.gpu_memory_utilization());
  req.set_device_total_bytes(device_total);
  // The scheduler compares each device's own free figure with the budget;
  // here the plan is about whether the model fits a clean device.
  req.set_device_free_bytes(device_total);
  req.set_device_count(tp);
  dcufleet::v1::MemoryPlan plan = PlanMemory(ShapeFromCatalog(*entry), req);
  m.fits = plan.fits();
  m.required_free_bytes = plan.budget_bytes();
  m.reason = plan.failure_reason();
  // A placement keeps the figures, not the lines rendered from them (nor the
  // name its spec already has); modelkit::PlacementMemoryLines renders them
  // without the start-up rule, which the scheduler checks per device.
  plan.clear_explanation();
  plan.clear_tried();
  plan.mutable_request()->clear_model();
  m.plan = std::move(plan);
  return m;
}

const dcufleet::v1::ModelDirectory* CatalogKnowledge::FindModelDir(
    const std::string& model, const dcufleet::v1::NodeView& node, const Snapshot& snap,
    const dcufleet::v1::ModelDirectory** damaged) {
  for (const auto& dir : node.inventory().models()) {
    // Directory names repeat across the fleet: match each name once.
    std::string key = absl::StrCat(model, std::string(1, '\0'), dir.name());
    bool match = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = dir_matches_.find(key);
      if (it != dir_matches_.end()) {
        match = it->second;
      } else {
        const dcufleet::v1::ModelEntry* m = FindCatalogModel(snap.audit, dir.name());
        match = m && m->name() == model;
        if (dir_matches_.size() > 100000) dir_matches_.clear();
        dir_matches_[key] = match;
      }
    }
    if (!match) continue;
    // The agent's weights verification (issue 19) refuses a damaged copy as
    // missing shards always were: vLLM would load it silently or fail late.
    if (!dir.missing_shards().empty() ||
        dir.weights().verdict() == dcufleet::v1::WEIGHTS_DAMAGED) {
      if (damaged != nullptr && *damaged == nullptr) *damaged = &dir;
      continue;
    }
    return &dir;
  }
  return nullptr;
}

std::string CatalogKnowledge::ModelDamageOnNode(const std::string& model,
                                                const dcufleet::v1::NodeView& node) {
  auto snap = Load();
  const dcufleet::v1::ModelDirectory* damaged = nullptr;
  if (FindModelDir(model, node, *snap, &damaged) != nullptr || damaged == nullptr) return "";
  std::string why = modelkit::WeightsSummary(damaged->weights());
  if (why.empty()) {
    why = absl::StrCat(damaged->missing_shards_size(), " shard(s) missing: ",
                       absl::StrJoin(damaged->missing_shards(), ", "));
  }
  return absl::StrCat("model directory ", damaged->path(), " fails verification: ", why);
}

std::string CatalogKnowledge::ModelPathOnNode(const std::string& model,
                                              const dcufleet::v1::NodeView& node) {
  auto snap = Load();
  const auto* dir = FindModelDir(model, node, *snap);
  return dir ? dir->path() : "";
}

std::string CatalogKnowledge::RuntimeOnNode(const Plan& plan, const dcufleet::v1::NodeView& node) {
  auto snap = Load();
  for (const auto& env : node.inventory().environments()) {
    if (common::ParseRuntimeKind(env.kind()) != plan.runtime_kind()) continue;
    if (env.location() == plan.runtime_location()) return env.location();
    const Stack* match = MatchEnvironment(snap->stacks, env);
    if (match && match->id() == plan.stack_id()) return env.location();
  }
  return "";
}

ModelPreparation CatalogKnowledge::PrepareModel(const std::string& model,
                                                const dcufleet::v1::NodeView& node,
                                                const std::string& model_path, const Plan& plan,
                                                int tp) {
  auto snap = Load();
  const dcufleet::v1::ModelDirectory* dir = nullptr;
  for (const auto& d : node.inventory().models()) {
    if (d.path() == model_path) dir = &d;
  }
  if (!dir || dir->config_json().empty()) return Prepare(model, node, model_path, plan, *snap);
  // Everything the audit and the remediation read (the node's name only
  // appears when there is no config, handled above). The directory listing
  // and config.json (kilobytes) enter the key as a hash, not as text: a key
  // string of them built per placement was 5% of a reconcile pass. A hit is
  // compared with the texts it was computed from before it is used.
  size_t content = absl::HashOf(dir->config_json());
  for (const auto& e : dir->entries()) content = absl::HashOf(content, e);
  std::string key = absl::StrCat(model, "\n", plan.stack_id(), "\n", model_path, "\n",
                                 node.inventory().agent_state_dir(), "\n", content);
  auto same_inputs = [dir](const CachedPreparation& c) {
    return c.config_json == dir->config_json() &&
           std::equal(c.entries.begin(), c.entries.end(), dir->entries().begin(),
                      dir->entries().end());
  };
  {
    absl::MutexLock lock(&mu_);
    auto it = preparations_.find(key);
    if (it != preparations_.end() && same_inputs(it->second)) return it->second.preparation;
  }
  ModelPreparation prep = Prepare(model, node, model_path, plan, *snap);
  absl::MutexLock lock(&mu_);
  if (preparations_.size() > 4096) preparations_.clear();
  preparations_.insert_or_assign(
      std::move(key), CachedPreparation{dir->config_json(),
                                        {dir->entries().begin(), dir->entries().end()}, prep});
  return prep;
}

ModelPreparation CatalogKnowledge::Prepare(const std::string& model,
                                           const dcufleet::v1::NodeView& node,
                                           const std::string& model_path, const Plan& plan,
                                           const Snapshot& snap) {
  ModelPreparation prep;
  prep.model_path = model_path;
  const dcufleet::v1::ModelDirectory* dir = nullptr;
  for (const auto& d : node.inventory().models()) {
    if (d.path() == model_path) dir = &d;
  }
  const dcufleet::v1::ModelEntry* entry = snap.Model(model);
  const Stack* stack = snap.Stack(plan.stack_id());
  if (!dir || !entry) return prep;
  if (dir->config_json().empty()) {
    dcufleet::v1::Finding f;
    f.set_severity(dcufleet::v1::FINDING_WARNING);
    f.set_code("config_not_reported");
    f.set_field("config.json");
    f.set_message(absl::StrCat("node '", node.name(), "' did not report ", model_path,
                               "/config.json; it cannot be audited"));
    prep.findings.push_back(f);
    return prep;
  }
  AuditOptions opts;
  opts.models = snap.models;
  if (stack) opts.stacks.push_back(*stack);
  opts.model_name = model;
  dcufleet::v1::AuditReport audit = AuditConfigText(dir->config_json(), dir->name(), opts);
  for (const auto& f : audit.findings()) {
    if (f.severity() == dcufleet::v1::FINDING_WARNING || f.severity() == dcufleet::v1::FINDING_ERROR) {
      prep.findings.push_back(f);
    }
  }
  RemediationOptions ropts;
  std::string state_dir = node.inventory().agent_state_dir();
  ropts.overlay_root = absl::StrCat(state_dir.empty() ? "/var/lib/dcufleet" : state_dir, "/overlays");
  std::vector<std::string> entries(dir->entries().begin(), dir->entries().end());
  auto rem = PlanConfigRemediation(model_path, entries, dir->config_json(), *entry, stack, ropts);
  if (!rem.ok()) {
    if (HasErrors(audit)) {
      prep.blocking_reason = absl::StrCat("model directory ", model_path, " on node '", node.name(),
                                          "' cannot be corrected: ", rem.status().message());
    }
    return prep;
  }
  std::vector<std::string> fixes;
  for (const auto& c : rem->corrections()) {
    fixes.push_back(absl::StrCat(c.field(), " ", c.old_value().empty() ? "(missing)" : c.old_value(),
                                 " → ", c.new_value()));
  }
  switch (rem->kind()) {
    case dcufleet::v1::REMEDIATION_OVERLAY_DIR:
      prep.remediation = "overlay_dir";
      prep.overlay_dir = rem->overlay_dir();
      prep.overlay_config_json = rem->corrected_config_json();
      prep.model_path = rem->model_path().empty() ? rem->overlay_dir() : rem->model_path();
      prep.remediation_detail = absl::StrCat("config overlay ", rem->overlay_dir(), " (",
                                             absl::StrJoin(fixes, ", "), ")");
      break;
    case dcufleet::v1::REMEDIATION_HF_OVERRIDES:
      prep.remediation = "hf_overrides";
      prep.extra_args.assign(rem->extra_args().begin(), rem->extra_args().end());
      prep.remediation_detail = absl::StrCat("--hf-overrides ", rem->hf_overrides_json(), " (",
                                             absl::StrJoin(fixes, ", "), ")");
      break;
    default:
      break;
  }
  return prep;
}

absl::StatusOr<dcufleet::v1::InstanceSpec> CatalogKnowledge::RenderLaunch(
    const dcufleet::v1::DeploymentSpec& spec, const Plan& plan,
    const dcufleet::v1::Placement& placement, const std::string& model_path,
    int64_t device_total) {
  auto snap = Load();
  // The snapshot's stack, not a copy (it lives as long as `snap`); the store
  // only for a stack the snapshot does not hold.
  const Stack* stack = snap->Stack(plan.stack_id());
  std::optional<Stack> fetched;
  if (!stack) {
    absl::StatusOr<Stack> s = store_->GetStack(plan.stack_id());
    if (!s.ok()) return s.status();
    fetched = *std::move(s);
    stack = &*fetched;
  }
  const dcufleet::v1::ArchRecipe* recipe = RecipeFor(*stack, placement.arch());
  // The plan carries where the env/image is on the chosen node.
  const std::string location =
      plan.runtime_location().empty() ? stack->runtime_location() : plan.runtime_location();
  std::map<std::string, std::string> values = {
      {"model_path", model_path},
      {"port", absl::StrCat(placement.port())},
      {"tp", absl::StrCat(placement.tp())},
      {"served_name", spec.served_model_name().empty() ? spec.model() : spec.served_model_name()},
      {"max_model_len", absl::StrCat(spec.max_model_len())},
      {"max_num_seqs", absl::StrCat(spec.max_num_seqs())},
      {"gpu_memory_utilization", absl::StrCat(spec.gpu_memory_utilization())},
      {"dtype", "auto"},
      {"host", "0.0.0.0"},
      {"python", stack->runtime_kind() == dcufleet::v1::RUNTIME_BARE
                     ? absl::StrCat(location, "/bin/python")
                     : "python3"},
  };
  values["kv_cache_memory_bytes"] = "0";
  std::vector<std::string> tmpl(stack->argv_template().begin(), stack->argv_template().end());
  if (recipe) tmpl.insert(tmpl.end(), recipe->extra_args().begin(), recipe->extra_args().end());
  bool needs_kv = false;
  for (const auto& t : tmpl) needs_kv |= absl::StrContains(t, "{kv_cache_memory_bytes}");
  if (needs_kv) {
    // Sized from the memory plan on the placed devices (their real total, as
    // the diagnosis facts and remediations use).
    values["kv_cache_memory_bytes"] =
        absl::StrCat(KvCacheBytes(spec, placement.tp(), device_total));
  }
  auto argv = RenderArgv(tmpl, values);
  if (!argv.ok()) return argv.status();
  dcufleet::v1::InstanceSpec out;
  out.set_stack_id(stack->id());
  // The stack's stall windows travel with the launch: the agent applies them.
  if (stack->has_startup_stall()) *out.mutable_startup_stall() = stack->startup_stall();
  out.set_runtime_kind(stack->runtime_kind());
  out.set_runtime_location(location);
  for (const auto& a : *argv) out.add_argv(a);
  out.set_model_path(model_path);
  out.set_served_model_name(values["served_name"]);
  out.set_visible_devices_env(IsNvidiaArch(placement.arch()) ? "CUDA_VISIBLE_DEVICES"
                                                             : "HIP_VISIBLE_DEVICES");
  auto apply_env = [&](const dcufleet::v1::EnvRecipe& env, bool prefixes_first) {
    for (const auto& s : env.source_scripts()) out.add_source_scripts(s);
    for (const auto& v : env.variables()) (*out.mutable_env())[v.name()] = v.value();
    std::vector<std::string> prefixes(env.ld_library_path_prefix().begin(),
                                      env.ld_library_path_prefix().end());
    std::vector<std::string> existing(out.ld_library_path_prefix().begin(),
                                      out.ld_library_path_prefix().end());
    out.clear_ld_library_path_prefix();
    for (const auto& p : prefixes_first ? MergeLibraryOrder(prefixes, existing)
                                        : MergeLibraryOrder(existing, prefixes)) {
      out.add_ld_library_path_prefix(p);
    }
  };
  apply_env(stack->env(), false);
  // The arch recipe's library order goes first: it exists to override.
  if (recipe) apply_env(recipe->env(), true);
  // What earlier launches of this stack on this arch learned (issue 15):
  // the next launch starts with it, on any node, for any deployment.
  {
    absl::MutexLock lock(&mu_);
    LoadEvidenceLocked();
    EvidenceKey key(stack->id(), placement.arch());
    const auto& fix = TallyLocked(key).fix.fix();
    if (fix) modelkit::ApplyLearnedFix(*fix, &out);
  }
  return out;
}

int64_t CatalogKnowledge::KvCacheBytes(const dcufleet::v1::DeploymentSpec& spec, int tp,
                                       int64_t device_total) {
  auto snap = Load();
  const dcufleet::v1::ModelEntry* cached = snap->Model(spec.model());
  absl::StatusOr<dcufleet::v1::ModelEntry> entry =
      cached ? absl::StatusOr<dcufleet::v1::ModelEntry>(*cached) : store_->GetModel(spec.model());
  if (!entry.ok()) return 1LL << 30;
  ModelShape shape = ShapeFromCatalog(*entry);
  // KV for max_num_seqs full sequences, at least one, and never more than
  // the budget leaves after weights and overhead (when the total is known).
  int64_t per_token = shape.KvBytesPerTokenPerDevice(std::max(1, tp));
  int64_t want = per_token * spec.max_model_len() * std::max(1, spec.max_num_seqs());
  int64_t min = per_token * spec.max_model_len();
  if (device_total > 0) {
    dcufleet::v1::MemoryPlanRequest req;
    req.set_tp(tp);
    req.set_max_model_len(spec.max_model_len());
    req.set_max_num_seqs(spec.max_num_seqs());
    req.set_gpu_memory_utilization(spec.gpu_memory_utilization());
    req.set_device_total_bytes(device_total);
    req.set_device_free_bytes(device_total);
    req.set_device_count(tp);
    dcufleet::v1::MemoryPlan plan = PlanMemory(shape, req);
    if (plan.kv_available_bytes() > 0) want = std::min(want, plan.kv_available_bytes());
  }
  return std::max({want, min, int64_t{1} << 28});
}

void CatalogKnowledge::RecordOutcome(const LaunchOutcomeRecord& o) {
  dcufleet::v1::Evidence e;
  e.set_stack_id(o.stack_id);
  e.set_node(o.node);
  e.set_arch(o.arch);
  e.set_product_name(o.product_name);
  e.set_model(o.model);
  e.set_tp(o.tp);
  e.set_outcome(o.ready ? dcufleet::v1::LAUNCH_READY : dcufleet::v1::LAUNCH_FAILED);
  e.set_failure_class(o.failure_class);
  if (!o.ready) e.set_scope(ScopeFromName(o.scope));
  e.set_message(o.message.substr(0, 2000));
  e.set_kind(dcufleet::v1::EVIDENCE_LAUNCH);
  e.set_source(absl::StrCat("instance ", o.instance_id));
  e.set_at_ms(absl::ToUnixMillis(clock_->Now()));
  e.set_duration_ms(o.duration_ms);
  e.set_instance_id(o.instance_id);
  e.set_remediation(o.remediation);
  e.set_config_ok(o.config_ok);
  if (o.ready && !modelkit::LearnedFixEmpty(o.learned_fix)) *e.mutable_learned_fix() = o.learned_fix;
  e.set_carried_fix(o.carried_fix);
  e.set_evidence_id(common::NewId("ev"));
  // In memory at once (this (stack, arch)'s verdicts change now); written
  // with the rest of the pass by FlushOutcomes.
  absl::MutexLock lock(&mu_);
  // In memory at once (this (stack, arch)'s verdicts change now).
  if (evidence_valid_) AddEvidenceLocked(e);
  pending_evidence_.push_back(std::move(e));
}

void CatalogKnowledge::FlushOutcomes() {
  std::vector<dcufleet::v1::Evidence> batch;
  {
    absl::MutexLock lock(&mu_);
    batch.swap(pending_evidence_);
  }
  if (batch.empty()) return;
  auto added = store_->RecordEvidenceBatch(batch);
  if (added.ok()) return;
  if (absl::IsUnavailable(added.status())) {
    // The store is away (or this controller no longer leads): kept for the
    // next pass, bounded, rather than lost.
    constexpr size_t kMaxPending = 10000;
    DCU_LOG_WARN("recording ", batch.size(), " launch outcomes: ", added.status().message(), "; retrying");
    absl::MutexLock lock(&mu_);
    if (batch.size() + pending_evidence_.size() <= kMaxPending) {
      batch.insert(batch.end(), std::make_move_iterator(pending_evidence_.begin()),
                   std::make_move_iterator(pending_evidence_.end()));
      pending_evidence_.swap(batch);
    }
    return;
  }
  // One bad row (a stack removed meanwhile) must not lose the others.
  for (const auto& e : batch) {
    auto r = store_->RecordEvidence(e);
    if (!r.ok()) DCU_LOG_WARN("recording evidence for '", e.stack_id(), "': ", r.status().message());
  }
}

void CatalogKnowledge::ObserveNodes(const std::vector<const dcufleet::v1::NodeView*>& nodes) {
  int64_t now_ms = absl::ToUnixMillis(clock_->Now());
  std::vector<CatalogStore::NodeObservation> observations;
  for (const dcufleet::v1::NodeView* np : nodes) {
    const dcufleet::v1::NodeView& n = *np;
    std::string fp;
    for (const auto& m : n.inventory().models()) {
      // The weights verdict too: a copy found damaged (or repaired, or
      // copied in, issue 19) is recorded as such.
      absl::StrAppend(&fp, m.path(), "|", m.config_sha256(), "|", m.weight_bytes(), "|",
                      static_cast<int>(m.weights().verdict()), ";");
    }
    for (const auto& e : n.inventory().environments()) {
      absl::StrAppend(&fp, e.kind(), "|", e.location(), ";");
      // A protobuf map iterates in no fixed order: sorted, or every report
      // of an unchanged node looks new (measured: the periodic observation
      // of 10,000 nodes rewrote them all, 0.8 s of SQLite every 10 s).
      std::map<std::string, std::string> versions(e.package_versions().begin(),
                                                  e.package_versions().end());
      for (const auto& [k, v] : versions) absl::StrAppend(&fp, k, "=", v, ",");
    }
    {
      absl::MutexLock lock(&mu_);
      auto it = observed_.find(n.name());
      if (it != observed_.end() && it->second == fp) continue;
      observed_[n.name()] = fp;
    }
    std::vector<dcufleet::v1::NodeModelDirectory> dirs;
    auto snap = Load();
    AuditOptions opts;
    opts.models = snap->models;
    for (const auto& m : n.inventory().models()) {
      dcufleet::v1::NodeModelDirectory d;
      d.set_node(n.name());
      *d.mutable_directory() = m;
      d.mutable_directory()->clear_config_json();
      const auto* entry = FindCatalogModel(opts, m.name());
      if (entry) d.set_model(entry->name());
      if (!m.config_json().empty()) {
        opts.model_name = entry ? entry->name() : "";
        // The same config.json comes from thousands of nodes: audit it once.
        std::string key = absl::StrCat(opts.model_name, "\n", m.name(), "\n", m.config_json());
        bool found = false;
        {
          absl::MutexLock lock(&mu_);
          auto it = audits_.find(key);
          if (it != audits_.end()) {
            *d.mutable_audit() = it->second;
            found = true;
          }
        }
        if (!found) {
          *d.mutable_audit() = AuditConfigText(m.config_json(), m.name(), opts);
          absl::MutexLock lock(&mu_);
          if (audits_.size() > 4096) audits_.clear();
          audits_.emplace(std::move(key), d.audit());
        }
      }
      d.set_seen_at_ms(now_ms);
      dirs.push_back(std::move(d));
    }
    CatalogStore::NodeObservation o;
    o.node = n.name();
    o.dirs = std::move(dirs);
    o.envs.assign(n.inventory().environments().begin(), n.inventory().environments().end());
    observations.push_back(std::move(o));
  }
  // Changed nodes a slice per transaction: a fleet connecting at once was
  // two commits per node (on PostgreSQL, 0.7 s for 1,000 nodes in the first
  // placement pass of bench/ha/stores.sh).
  constexpr size_t kSlice = 500;
  for (size_t at = 0; at < observations.size(); at += kSlice) {
    std::vector<CatalogStore::NodeObservation> slice(
        std::make_move_iterator(observations.begin() + at),
        std::make_move_iterator(observations.begin() + std::min(observations.size(), at + kSlice)));
    RecordObservations(slice, now_ms);
  }
}

void CatalogKnowledge::RecordObservations(const std::vector<CatalogStore::NodeObservation>& observations,
                                          int64_t now_ms) {
  auto recorded = store_->RecordNodeObservations(observations, now_ms);
  if (!recorded.ok()) {
    DCU_LOG_WARN("recording what ", observations.size(), " nodes have: ", recorded.status().message(),
                 "; node by node");
    std::vector<std::vector<dcufleet::v1::NodeEnvironment>> one_by_one;
    for (const auto& o : observations) {
      absl::Status s = store_->ReplaceNodeModelDirectories(o.node, o.dirs, now_ms);
      if (!s.ok()) DCU_LOG_WARN("recording models of node '", o.node, "': ", s.message());
      auto rec = store_->RecordNodeEnvironments(o.node, o.envs, now_ms);
      if (!rec.ok()) DCU_LOG_WARN("recording environments of node '", o.node, "': ", rec.status().message());
      one_by_one.push_back(rec.ok() ? *std::move(rec) : std::vector<dcufleet::v1::NodeEnvironment>{});
    }
    recorded = std::move(one_by_one);
  }
  for (size_t i = 0; i < recorded->size() && i < observations.size(); ++i) {
    for (const auto& e : (*recorded)[i]) {
      if (e.registered_new()) {
        DCU_LOG_INFO("registered new untested stack '", e.stack_id(), "' found on node '",
                     observations[i].node, "' at ", e.environment().location());
        Invalidate();
      }
    }
  }
}

std::map<std::string, std::string> CatalogKnowledge::DiagnosisFacts(
    const dcufleet::v1::DeploymentSpec& spec, const dcufleet::v1::Attempt& attempt,
    int64_t device_total) {
  std::map<std::string, std::string> facts;
  facts["model.name"] = spec.model();
  facts["stack.id"] = attempt.stack_id();
  facts["arch"] = attempt.placement().arch();
  auto snap = Load();
  const Stack* cached = snap->Stack(attempt.stack_id());
  absl::StatusOr<Stack> stack =
      cached ? absl::StatusOr<Stack>(*cached) : store_->GetStack(attempt.stack_id());
  if (stack.ok()) {
    // The stack's versions, for the rules' typed `when` conditions (a
    // triton 3.1.0 on gfx928 is expected next behind a head-size refusal):
    // the log seldom prints them, the catalog knows them.
    for (const auto& [component, version] :
         {std::pair<const char*, const std::string*>{"engine", &stack->engine_version()},
          {"dtk", &stack->dtk_version()},
          {"torch", &stack->torch_version()},
          {"triton", &stack->triton_version()},
          {"flash_attn", &stack->flash_attn_version()},
          {"python", &stack->python_version()}}) {
      if (!version->empty()) facts[modelkit::VersionFactOf(component)] = *version;
    }
    if (!stack->engine().empty()) facts["stack.engine"] = stack->engine();
    if (stack->capabilities().accepts_kv_cache_memory_bytes()) {
      facts["stack.accepts_kv_cache_memory_bytes"] = "true";
      facts["memory_plan.kv_cache_bytes"] =
          absl::StrCat(KvCacheBytes(spec, attempt.placement().tp(), device_total));
    }
    if (stack->capabilities().accepts_hf_overrides()) facts["stack.accepts_hf_overrides"] = "true";
    // SGLang's --mem-fraction-static: the share of a device for weights and
    // the KV pool, i.e. the memory plan's budget less its activation/runtime
    // overhead, over the device's total (rule no_cache_blocks.sglang).
    if (device_total > 0) {
      const dcufleet::v1::ModelEntry* model = snap->Model(spec.model());
      if (model) {
        dcufleet::v1::MemoryPlanRequest req;
        req.set_tp(attempt.placement().tp());
        req.set_max_model_len(spec.max_model_len());
        req.set_max_num_seqs(spec.max_num_seqs());
        req.set_gpu_memory_utilization(spec.gpu_memory_utilization());
        req.set_device_total_bytes(device_total);
        req.set_device_free_bytes(device_total);
        req.set_device_count(attempt.placement().tp());
        dcufleet::v1::MemoryPlan plan = PlanMemory(ShapeFromCatalog(*model), req);
        double fraction = static_cast<double>(plan.budget_bytes() - plan.overhead_bytes()) /
                          static_cast<double>(device_total);
        if (fraction > 0.05) {
          facts["memory_plan.mem_fraction_static"] =
              absl::StrFormat("%.2f", std::min(fraction, 0.95));
        }
      }
    }
    std::vector<std::string> prefixes(stack->env().ld_library_path_prefix().begin(),
                                      stack->env().ld_library_path_prefix().end());
    if (const auto* r = RecipeFor(*stack, attempt.placement().arch())) {
      prefixes.insert(prefixes.begin(), r->env().ld_library_path_prefix().begin(),
                      r->env().ld_library_path_prefix().end());
    }
    if (!prefixes.empty()) facts["stack.ld_library_path_recipe"] = absl::StrJoin(prefixes, ":");
  }
  // The config was audited before launch; when it needed a fix the fix is in
  // force, so a head-size error now is the stack's, not the config's.
  facts["model.config_audit_clean"] = "true";
  return facts;
}

}  // namespace dcu::controller
