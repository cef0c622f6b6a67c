#include "modelkit/verdict.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::Evidence;
using dcufleet::v1::FailureScope;
using dcufleet::v1::Verdict;

bool IsReady(const Evidence& e) { return e.outcome() == dcufleet::v1::LAUNCH_READY; }
bool IsFailed(const Evidence& e) { return e.outcome() == dcufleet::v1::LAUNCH_FAILED; }

std::string Plural(int n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

void KeepNewest(std::deque<std::string>* ids, const std::string& id) {
  ids->push_back(id);
  if (ids->size() > static_cast<size_t>(kVerdictEvidenceIds)) ids->pop_front();
}

void SetIds(const std::deque<std::string>& ids, Verdict* v) {
  for (const auto& id : ids) v->add_evidence_ids(id);
}

// "port_in_use, triton_kernel_compile_failure x2" (classes in name order).
std::string ClassSummary(const std::map<std::string, int>& by_class) {
  std::vector<std::string> parts;
  for (const auto& [cls, n] : by_class) {
    parts.push_back(n == 1 ? cls : absl::StrCat(cls, " x", n));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

FailureScope DefaultScopeOfFailureClass(absl::string_view c) {
  static const auto* stack_arch = new std::set<std::string, std::less<>>{
      "triton_unsupported_gpu_target", "triton_kernel_compile_failure",
      "hip_invalid_device_function",   "unsupported_gpu_arch_runtime",
      "rocm_library_missing_arch",     "wrong_platform_build"};
  static const auto* remediable = new std::set<std::string, std::less<>>{
      "shared_lib_undefined_symbol", "missing_custom_op", "no_cache_blocks"};
  static const auto* config = new std::set<std::string, std::less<>>{
      "config_or_tokenizer_error", "model_path_not_found", "tp_not_divisible_heads"};
  static const auto* node = new std::set<std::string, std::less<>>{
      "startup_free_memory_below_utilization", "port_in_use", "cuda_oom_model_load",
      "max_model_len_exceeds_kv_capacity", "startup_stalled", "startup_ceiling"};
  if (stack_arch->count(c)) return dcufleet::v1::SCOPE_STACK_ARCH;
  if (remediable->count(c)) return dcufleet::v1::SCOPE_REMEDIABLE;
  if (config->count(c)) return dcufleet::v1::SCOPE_MODEL_CONFIG;
  if (node->count(c)) return dcufleet::v1::SCOPE_NODE_STATE;
  // Nothing recognised (a kill, a signal, a crash without a message, a lost
  // node): it implicates the node or the moment, never the stack.
  if (c.empty() || c == "unknown" || c == "node_lost" || c == "signal_while_serving") {
    return dcufleet::v1::SCOPE_NODE_STATE;
  }
  return dcufleet::v1::SCOPE_STACK_ARCH_MODEL;
}

FailureScope ScopeOf(const Evidence& e) {
  if (e.scope() != dcufleet::v1::FAILURE_SCOPE_UNSPECIFIED) return e.scope();
  FailureScope s = DefaultScopeOfFailureClass(e.failure_class());
  // A head size error from a config that failed its audit is the config's
  // fault (the first seed), not the stack's.
  if (s == dcufleet::v1::SCOPE_STACK_ARCH_MODEL && !e.config_ok()) {
    return dcufleet::v1::SCOPE_MODEL_CONFIG;
  }
  return s;
}

std::string FormatDay(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::vector<const Evidence*> RowsInTimeOrder(const std::vector<Evidence>& evidence,
                                             absl::string_view stack_id, absl::string_view arch) {
  std::vector<const Evidence*> rows;
  for (const auto& e : evidence) {
    if (e.stack_id() == stack_id && e.arch() == arch) rows.push_back(&e);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Evidence* a, const Evidence* b) { return a->at_ms() < b->at_ms(); });
  return rows;
}

VerdictTally::VerdictTally(std::string stack_id, std::string arch)
    : stack_id_(std::move(stack_id)),
      arch_(std::move(arch)),
      newest_at_ms_(std::numeric_limits<int64_t>::min()) {}

void VerdictTally::Fold::Add(const Evidence& e, bool decisive) {
  const bool probe = e.kind() == dcufleet::v1::EVIDENCE_PROBE;
  auto count = [probe](Runs* r) { ++(probe ? r->probes : r->launches); };
  if (!decisive) {
    count(&ignored);
    ++ignored_by_class[e.failure_class()];
    last_ignored_at_ms = e.at_ms();
    return;
  }
  latest_at_ms = e.at_ms();
  latest_ready = IsReady(e);
  if (latest_ready) {
    count(&ready);
    std::string part = e.model().empty() ? std::string("probe") : e.model();
    if (e.tp() > 0) absl::StrAppend(&part, " TP=", e.tp());
    if (std::find(ready_described.begin(), ready_described.end(), part) == ready_described.end()) {
      ready_described.push_back(std::move(part));
    }
    KeepNewest(&ready_ids, e.evidence_id());
    return;
  }
  latest_class = e.failure_class();
  ClassFailures& f = failures[latest_class];
  count(&f.runs);
  if (e.kind() != dcufleet::v1::EVIDENCE_LAUNCH) f.catalog_word = true;
  if (f.runs.total() == 1) {
    f.first_node = e.node();
  } else if (e.node() != f.first_node) {
    f.many_nodes = true;
  }
  KeepNewest(&f.ids, e.evidence_id());
}

int VerdictTally::Fold::failed() const {
  int n = 0;
  for (const auto& [cls, f] : failures) n += f.runs.total();
  return n;
}

bool VerdictTally::Add(const Evidence& e) {
  if (e.stack_id() != stack_id_ || e.arch() != arch_) return true;
  if (e.at_ms() < newest_at_ms_) return false;
  newest_at_ms_ = e.at_ms();
  const FailureScope scope = ScopeOf(e);
  // Ready launches (any model) and stack-arch failures decide the arch.
  arch_fold_.Add(e, IsReady(e) || (IsFailed(e) && scope == dcufleet::v1::SCOPE_STACK_ARCH));
  // A model's own rows decide it: ready, or a failure of the stack on that
  // arch, for everyone or for this model.
  if (!e.model().empty()) {
    model_folds_[e.model()].Add(
        e, IsReady(e) || (IsFailed(e) && (scope == dcufleet::v1::SCOPE_STACK_ARCH ||
                                          scope == dcufleet::v1::SCOPE_STACK_ARCH_MODEL)));
  }
  return true;
}

namespace {

// "3 launches" or "2 launches and 1 probe".
template <typename R>
std::string CountRuns(const R& r) {
  if (r.probes == 0) return Plural(r.launches, "launch", "launches");
  if (r.launches == 0) return Plural(r.probes, "probe", "probes");
  return absl::StrCat(Plural(r.launches, "launch", "launches"), " and ",
                      Plural(r.probes, "probe", "probes"));
}

}  // namespace

void VerdictTally::Render(const Fold& f, absl::string_view subject, bool arch_level,
                          Verdict* v) const {
  v->set_stack_id(stack_id_);
  v->set_arch(arch_);
  v->set_ready_count(f.ready.total());
  v->set_failed_count(f.failed());
  v->set_ignored_count(f.ignored.total());
  v->set_last_at_ms(f.latest_at_ms);
  const std::string day = FormatDay(f.latest_at_ms);
  if (f.latest_ready) {
    v->set_state(dcufleet::v1::VERDICT_WORKS);
    std::string reason = absl::StrCat("works ", subject, ": ", CountRuns(f.ready), " ready (",
                                      absl::StrJoin(f.ready_described, ", "), "), last ", day);
    if (arch_level && v->failed_count() > 0) {
      std::map<std::string, int> by_class;
      for (const auto& [cls, failures] : f.failures) by_class[cls] = failures.runs.total();
      absl::StrAppend(&reason, "; ", Plural(v->failed_count(), "earlier failure", "earlier failures"),
                      " superseded (", ClassSummary(by_class), ")");
    }
    v->set_reason(reason);
    SetIds(f.ready_ids, v);
    return;
  }
  v->set_state(dcufleet::v1::VERDICT_BROKEN);
  v->set_failure_class(f.latest_class);
  const ClassFailures& same = f.failures.at(f.latest_class);
  std::string reason = absl::StrCat("broken ", subject, ": ", f.latest_class, ", ",
                                    CountRuns(same.runs), ", last ", day);
  if (f.ready.total() > 0) {
    absl::StrAppend(&reason, "; ", Plural(f.ready.total(), "earlier ready launch", "earlier ready launches"),
                    " superseded");
    if (arch_level) absl::StrAppend(&reason, " (", absl::StrJoin(f.ready_described, ", "), ")");
  }
  // The one node whose launches alone make it broken ("" when a second node
  // agrees, or a seed, probe or human row: the catalog's own word).
  if (!same.catalog_word && !same.many_nodes) v->set_only_node(same.first_node);
  if (!v->only_node().empty()) absl::StrAppend(&reason, "; on the word of node '", v->only_node(), "' only");
  v->set_reason(reason);
  SetIds(same.ids, v);
}

Verdict VerdictTally::StackArch() const {
  const Fold& f = arch_fold_;
  Verdict v;
  if (f.decided()) {
    Render(f, absl::StrCat("on ", arch_), /*arch_level=*/true, &v);
    return v;
  }
  v.set_stack_id(stack_id_);
  v.set_arch(arch_);
  v.set_ignored_count(f.ignored.total());
  v.set_state(dcufleet::v1::VERDICT_UNTESTED);
  if (f.ignored.total() == 0) {
    v.set_reason(absl::StrCat("untested on ", arch_, ": no evidence"));
  } else {
    v.set_reason(absl::StrCat("untested on ", arch_, ": ", CountRuns(f.ignored),
                              " that do not decide (", ClassSummary(f.ignored_by_class), ")"));
    v.set_last_at_ms(f.last_ignored_at_ms);
  }
  return v;
}

Verdict VerdictTally::Model(absl::string_view model) const {
  static const Fold* kNone = new Fold;
  auto it = model_folds_.find(model);
  const Fold& f = it == model_folds_.end() ? *kNone : it->second;
  const std::string subject = absl::StrCat(model, " on ", arch_);
  Verdict v;
  v.set_model(std::string(model));
  if (f.decided()) {
    Render(f, absl::StrCat("for ", subject), /*arch_level=*/false, &v);
    return v;
  }
  // Nothing of its own decides: the (stack, arch) verdict speaks for it.
  v.set_stack_id(stack_id_);
  v.set_arch(arch_);
  v.set_ignored_count(f.ignored.total());
  Verdict arch_verdict = StackArch();
  v.set_inherited(true);
  v.set_last_at_ms(arch_verdict.last_at_ms());
  if (arch_verdict.state() == dcufleet::v1::VERDICT_BROKEN) {
    v.set_state(dcufleet::v1::VERDICT_BROKEN);
    v.set_failure_class(arch_verdict.failure_class());
    v.set_reason(absl::StrCat("broken for ", subject, " (the stack is ", arch_verdict.reason(), ")"));
    v.set_only_node(arch_verdict.only_node());
    *v.mutable_evidence_ids() = arch_verdict.evidence_ids();
  } else if (arch_verdict.state() == dcufleet::v1::VERDICT_WORKS) {
    v.set_state(dcufleet::v1::VERDICT_UNTESTED);
    v.set_reason(absl::StrCat("untested for ", subject, "; the stack ", arch_verdict.reason()));
  } else {
    v.set_state(dcufleet::v1::VERDICT_UNTESTED);
    v.set_reason(absl::StrCat("untested for ", subject, ": no evidence"));
  }
  return v;
}

Verdict ComputeStackArchVerdict(absl::string_view stack_id, absl::string_view arch,
                                const std::vector<Evidence>& evidence) {
  VerdictTally tally{std::string(stack_id), std::string(arch)};
  for (const Evidence* e : RowsInTimeOrder(evidence, stack_id, arch)) tally.Add(*e);
  return tally.StackArch();
}

Verdict ComputeModelVerdict(absl::string_view stack_id, absl::string_view arch,
                            absl::string_view model, const std::vector<Evidence>& evidence) {
  VerdictTally tally{std::string(stack_id), std::string(arch)};
  for (const Evidence* e : RowsInTimeOrder(evidence, stack_id, arch)) tally.Add(*e);
  return tally.Model(model);
}

std::vector<Verdict> ComputeArchVerdicts(const dcufleet::v1::Stack& stack,
                                         const std::vector<Evidence>& evidence,
                                         absl::string_view only_arch) {
  std::set<std::string> arches(stack.arches().begin(), stack.arches().end());
  for (const auto& e : evidence) {
    if (e.stack_id() == stack.id()) arches.insert(e.arch());
  }
  std::vector<Verdict> out;
  for (const auto& arch : arches) {
    if (!only_arch.empty() && arch != only_arch) continue;
    out.push_back(ComputeStackArchVerdict(stack.id(), arch, evidence));
  }
  return out;
}

std::vector<Verdict> ComputeModelVerdicts(const dcufleet::v1::Stack& stack,
                                          const std::vector<Evidence>& evidence,
                                          absl::string_view only_arch) {
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& e : evidence) {
    if (e.stack_id() != stack.id() || e.model().empty()) continue;
    if (!only_arch.empty() && e.arch() != only_arch) continue;
    pairs.emplace(e.arch(), e.model());
  }
  std::vector<Verdict> out;
  for (const auto& [arch, model] : pairs) {
    out.push_back(ComputeModelVerdict(stack.id(), arch, model, evidence));
  }
  return out;
}

}  // namespace dcu::modelkit
