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

std::vector<const Evidence*> Select(const std::vector<Evidence>& evidence,
                                    absl::string_view stack_id, absl::string_view arch) {
  std::vector<const Evidence*> rows;
  for (const auto& e : evidence) {
    if (e.stack_id() == stack_id && e.arch() == arch) rows.push_back(&e);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Evidence* a, const Evidence* b) {
    if (a->at_ms() != b->at_ms()) return a->at_ms() < b->at_ms();
    return a->evidence_id() < b->evidence_id();
  });
  return rows;
}

std::string Plural(int n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// "3 launches" or "2 launches and 1 probe".
std::string CountRuns(const std::vector<const Evidence*>& rows) {
  int launches = 0, probes = 0;
  for (const Evidence* e : rows) {
    if (e->kind() == dcufleet::v1::EVIDENCE_PROBE) {
      ++probes;
    } else {
      ++launches;
    }
  }
  if (probes == 0) return Plural(launches, "launch", "launches");
  if (launches == 0) return Plural(probes, "probe", "probes");
  return absl::StrCat(Plural(launches, "launch", "launches"), " and ",
                      Plural(probes, "probe", "probes"));
}

// "qwen3-32b TP=2, qwen3-32b TP=4" (distinct, in order).
std::string DescribeRuns(const std::vector<const Evidence*>& rows) {
  std::vector<std::string> parts;
  for (const Evidence* e : rows) {
    std::string part = e->model().empty() ? std::string("probe") : e->model();
    if (e->tp() > 0) absl::StrAppend(&part, " TP=", e->tp());
    if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
  }
  return absl::StrJoin(parts, ", ");
}

std::string IgnoredSummary(const std::vector<const Evidence*>& ignored) {
  std::map<std::string, int> by_class;
  for (const Evidence* e : ignored) ++by_class[e->failure_class()];
  std::vector<std::string> parts;
  for (const auto& [cls, n] : by_class) {
    parts.push_back(n == 1 ? cls : absl::StrCat(cls, " x", n));
  }
  return absl::StrJoin(parts, ", ");
}

// The one node whose launches alone make a broken verdict ("" when a second
// node agrees, or a seed, probe or human row: the catalog's own word).
std::string OnlyNode(const std::vector<const Evidence*>& failures) {
  std::set<std::string> nodes;
  for (const Evidence* e : failures) {
    if (e->kind() != dcufleet::v1::EVIDENCE_LAUNCH) return "";
    nodes.insert(e->node());
  }
  return nodes.size() == 1 ? *nodes.begin() : "";
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

Verdict ComputeStackArchVerdict(absl::string_view stack_id, absl::string_view arch,
                                const std::vector<Evidence>& evidence) {
  Verdict v;
  v.set_stack_id(std::string(stack_id));
  v.set_arch(std::string(arch));
  std::vector<const Evidence*> rows = Select(evidence, stack_id, arch);
  std::vector<const Evidence*> decisive, ignored, ready;
  for (const Evidence* e : rows) {
    if (IsReady(*e)) {
      decisive.push_back(e);
      ready.push_back(e);
    } else if (IsFailed(*e) && ScopeOf(*e) == dcufleet::v1::SCOPE_STACK_ARCH) {
      decisive.push_back(e);
    } else {
      ignored.push_back(e);
    }
  }
  v.set_ignored_count(static_cast<int>(ignored.size()));
  v.set_ready_count(static_cast<int>(ready.size()));
  v.set_failed_count(static_cast<int>(decisive.size() - ready.size()));
  if (decisive.empty()) {
    v.set_state(dcufleet::v1::VERDICT_UNTESTED);
    if (ignored.empty()) {
      v.set_reason(absl::StrCat("untested on ", arch, ": no evidence"));
    } else {
      v.set_reason(absl::StrCat("untested on ", arch, ": ", CountRuns(ignored),
                                " that do not decide (", IgnoredSummary(ignored), ")"));
      v.set_last_at_ms(ignored.back()->at_ms());
    }
    return v;
  }
  const Evidence* latest = decisive.back();
  v.set_last_at_ms(latest->at_ms());
  if (IsReady(*latest)) {
    v.set_state(dcufleet::v1::VERDICT_WORKS);
    std::string reason = absl::StrCat("works on ", arch, ": ", CountRuns(ready), " ready (",
                                      DescribeRuns(ready), "), last ", FormatDay(latest->at_ms()));
    int superseded = v.failed_count();
    if (superseded > 0) {
      std::vector<const Evidence*> failed;
      for (const Evidence* e : decisive) {
        if (!IsReady(*e)) failed.push_back(e);
      }
      absl::StrAppend(&reason, "; ", Plural(superseded, "earlier failure", "earlier failures"),
                      " superseded (", IgnoredSummary(failed), ")");
    }
    v.set_reason(reason);
    for (const Evidence* e : ready) v.add_evidence_ids(e->evidence_id());
    return v;
  }
  v.set_state(dcufleet::v1::VERDICT_BROKEN);
  v.set_failure_class(latest->failure_class());
  std::vector<const Evidence*> same;
  for (const Evidence* e : decisive) {
    if (!IsReady(*e) && e->failure_class() == latest->failure_class()) same.push_back(e);
  }
  std::string reason = absl::StrCat("broken on ", arch, ": ", latest->failure_class(), ", ",
                                    CountRuns(same), ", last ", FormatDay(latest->at_ms()));
  if (!ready.empty()) {
    absl::StrAppend(&reason, "; ", Plural(static_cast<int>(ready.size()), "earlier ready launch",
                                          "earlier ready launches"),
                    " superseded (", DescribeRuns(ready), ")");
  }
  v.set_only_node(OnlyNode(same));
  if (!v.only_node().empty()) absl::StrAppend(&reason, "; on node '", v.only_node(), "''s word only");
  v.set_reason(reason);
  for (const Evidence* e : same) v.add_evidence_ids(e->evidence_id());
  return v;
}

Verdict ComputeModelVerdict(absl::string_view stack_id, absl::string_view arch,
                            absl::string_view model, const std::vector<Evidence>& evidence) {
  Verdict v;
  v.set_stack_id(std::string(stack_id));
  v.set_arch(std::string(arch));
  v.set_model(std::string(model));
  std::vector<const Evidence*> decisive, ready, ignored;
  for (const Evidence* e : Select(evidence, stack_id, arch)) {
    if (e->model() != model) continue;
    FailureScope scope = ScopeOf(*e);
    if (IsReady(*e)) {
      decisive.push_back(e);
      ready.push_back(e);
    } else if (IsFailed(*e) && (scope == dcufleet::v1::SCOPE_STACK_ARCH ||
                                scope == dcufleet::v1::SCOPE_STACK_ARCH_MODEL)) {
      decisive.push_back(e);
    } else {
      ignored.push_back(e);
    }
  }
  v.set_ready_count(static_cast<int>(ready.size()));
  v.set_failed_count(static_cast<int>(decisive.size() - ready.size()));
  v.set_ignored_count(static_cast<int>(ignored.size()));
  std::string subject = absl::StrCat(model, " on ", arch);
  if (decisive.empty()) {
    Verdict arch_verdict = ComputeStackArchVerdict(stack_id, arch, evidence);
    v.set_inherited(true);
    v.set_last_at_ms(arch_verdict.last_at_ms());
    if (arch_verdict.state() == dcufleet::v1::VERDICT_BROKEN) {
      v.set_state(dcufleet::v1::VERDICT_BROKEN);
      v.set_failure_class(arch_verdict.failure_class());
      v.set_reason(absl::StrCat("broken for ", subject, " (the stack is ", arch_verdict.reason(),
                                ")"));
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
  const Evidence* latest = decisive.back();
  v.set_last_at_ms(latest->at_ms());
  if (IsReady(*latest)) {
    v.set_state(dcufleet::v1::VERDICT_WORKS);
    v.set_reason(absl::StrCat("works for ", subject, ": ", CountRuns(ready), " ready (",
                              DescribeRuns(ready), "), last ", FormatDay(latest->at_ms())));
    for (const Evidence* e : ready) v.add_evidence_ids(e->evidence_id());
    return v;
  }
  v.set_state(dcufleet::v1::VERDICT_BROKEN);
  v.set_failure_class(latest->failure_class());
  std::vector<const Evidence*> same;
  for (const Evidence* e : decisive) {
    if (!IsReady(*e) && e->failure_class() == latest->failure_class()) same.push_back(e);
  }
  std::string reason = absl::StrCat("broken for ", subject, ": ", latest->failure_class(), ", ",
                                    CountRuns(same), ", last ", FormatDay(latest->at_ms()));
  if (!ready.empty()) {
    absl::StrAppend(&reason, "; ", Plural(static_cast<int>(ready.size()), "earlier ready launch",
                                          "earlier ready launches"),
                    " superseded");
  }
  v.set_only_node(OnlyNode(same));
  if (!v.only_node().empty()) absl::StrAppend(&reason, "; on node '", v.only_node(), "''s word only");
  v.set_reason(reason);
  for (const Evidence* e : same) v.add_evidence_ids(e->evidence_id());
  return v;
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
