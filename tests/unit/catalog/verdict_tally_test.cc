// VerdictTally and LearnedFixTally (issue 22) fold evidence row by row; the
// verdicts and the fix they give must be those of the implementation they
// replaced, which read every row of the key at once. That implementation is
// kept here, unchanged but for its names, as the reference: random
// histories are folded row by row and compared with it after every row.

#include <optional>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "modelkit/learned_fix.h"
#include "modelkit/verdict.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::Evidence;
using dcufleet::v1::FailureScope;
using dcufleet::v1::LearnedFix;
using dcufleet::v1::Verdict;

namespace reference {

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


Verdict OldStackArchVerdict(absl::string_view stack_id, absl::string_view arch,
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
  if (!v.only_node().empty()) absl::StrAppend(&reason, "; on the word of node '", v.only_node(), "' only");
  v.set_reason(reason);
  for (const Evidence* e : same) v.add_evidence_ids(e->evidence_id());
  return v;
}

Verdict OldModelVerdict(absl::string_view stack_id, absl::string_view arch,
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
    Verdict arch_verdict = OldStackArchVerdict(stack_id, arch, evidence);
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
  if (!v.only_node().empty()) absl::StrAppend(&reason, "; on the word of node '", v.only_node(), "' only");
  v.set_reason(reason);
  for (const Evidence* e : same) v.add_evidence_ids(e->evidence_id());
  return v;
}


bool OldDemotesCarriedFix(const Evidence& e) {
  if (e.outcome() != dcufleet::v1::LAUNCH_FAILED || e.carried_fix().empty()) return false;
  switch (ScopeOf(e)) {
    case dcufleet::v1::SCOPE_STACK_ARCH:
    case dcufleet::v1::SCOPE_STACK_ARCH_MODEL:
    case dcufleet::v1::SCOPE_REMEDIABLE:
      return true;
    default:
      return false;
  }
}


std::optional<LearnedFix> OldLearnedFixFor(absl::string_view stack_id, absl::string_view arch,
                                        const std::vector<Evidence>& evidence) {
  std::vector<const Evidence*> rows;
  for (const auto& e : evidence) {
    if (e.stack_id() == stack_id && e.arch() == arch) rows.push_back(&e);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Evidence* a, const Evidence* b) {
    if (a->at_ms() != b->at_ms()) return a->at_ms() > b->at_ms();
    return a->evidence_id() > b->evidence_id();
  });
  // Newest first: a demotion is newer than the fix it demotes.
  std::set<std::string> demoted;
  for (const Evidence* e : rows) {
    if (OldDemotesCarriedFix(*e)) demoted.insert(e->carried_fix());
    if (e->outcome() != dcufleet::v1::LAUNCH_READY || LearnedFixEmpty(e->learned_fix())) continue;
    // The newest fix decides; an older one is the same lesson, or an older
    // one, and must not come back because the newest was demoted.
    if (demoted.count(e->evidence_id())) return std::nullopt;
    LearnedFix fix = e->learned_fix();
    fix.set_evidence_id(e->evidence_id());
    fix.set_stack_id(e->stack_id());
    fix.set_arch(e->arch());
    fix.set_node(e->node());
    fix.set_instance_id(e->instance_id());
    fix.set_at_ms(e->at_ms());
    return fix;
  }
  return std::nullopt;
}


}  // namespace reference

// A random history of one key, with rows of another arch and stack mixed
// in: ready and failed launches of two models and probes, every failure
// scope, several nodes, learned fixes and launches that carried them.
// Rows of one millisecond are in evidence-id order, so the reference's
// tie-break (by id) and the tally's (order given) agree.
std::vector<Evidence> RandomHistory(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int k) { return static_cast<int>(rng() % k); };
  const std::vector<std::string> classes = {
      "triton_unsupported_gpu_target", "hip_invalid_device_function", "shared_lib_undefined_symbol",
      "port_in_use", "cuda_oom_model_load", "config_or_tokenizer_error", "unsupported_head_size",
      "unknown", ""};
  const std::vector<std::string> models = {"m1", "m2", ""};
  std::vector<Evidence> rows;
  std::vector<std::string> fixes;
  int64_t at = 1'780'000'000'000;
  for (int i = 0; i < n; ++i) {
    Evidence e;
    e.set_evidence_id(absl::StrCat("ev-", absl::Dec(i, absl::kZeroPad6)));
    e.set_stack_id(pick(20) == 0 ? "t" : "s");
    e.set_arch(pick(15) == 0 ? "gfx906" : "gfx928");
    e.set_model(models[pick(models.size())]);
    e.set_tp(1 << pick(3));
    e.set_node(absl::StrCat("node-", pick(pick(4) == 0 ? 3 : 1)));
    int kind = pick(10);
    e.set_kind(kind == 0 ? dcufleet::v1::EVIDENCE_PROBE
                         : kind == 1 ? dcufleet::v1::EVIDENCE_SEED : dcufleet::v1::EVIDENCE_LAUNCH);
    e.set_config_ok(pick(6) != 0);
    if (pick(5) < 2) {
      e.set_outcome(dcufleet::v1::LAUNCH_READY);
      if (pick(4) == 0) {
        e.mutable_learned_fix()->add_ld_library_path_prefix(absl::StrCat("/opt/dtk/lib", i));
        fixes.push_back(e.evidence_id());
      }
    } else {
      e.set_outcome(dcufleet::v1::LAUNCH_FAILED);
      e.set_failure_class(classes[pick(classes.size())]);
      if (pick(8) == 0) e.set_scope(static_cast<FailureScope>(1 + pick(5)));
      if (!fixes.empty() && pick(3) == 0) e.set_carried_fix(fixes[pick(fixes.size())]);
    }
    // Same millisecond, minutes or days apart.
    int step = pick(4);
    at += step == 0 ? 0 : step == 1 ? 1 : step == 2 ? 60'000 : 86'400'000LL * (1 + pick(3));
    e.set_at_ms(at);
    rows.push_back(std::move(e));
  }
  return rows;
}

// The reference lists every deciding row; the tally the newest
// kVerdictEvidenceIds of them, in the same order.
void ExpectSameVerdict(Verdict want, Verdict got, const std::string& where) {
  std::vector<std::string> want_ids(want.evidence_ids().begin(), want.evidence_ids().end());
  if (want_ids.size() > static_cast<size_t>(kVerdictEvidenceIds)) {
    want_ids.erase(want_ids.begin(), want_ids.end() - kVerdictEvidenceIds);
  }
  std::vector<std::string> got_ids(got.evidence_ids().begin(), got.evidence_ids().end());
  EXPECT_EQ(got_ids, want_ids) << where;
  want.clear_evidence_ids();
  got.clear_evidence_ids();
  EXPECT_EQ(got.DebugString(), want.DebugString()) << where;
}

TEST(VerdictTallyTest, RowByRowItGivesTheVerdictsOfReadingEveryRow) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::vector<Evidence> history = RandomHistory(seed, 120);
    VerdictTally tally("s", "gfx928");
    LearnedFixTally fix;
    std::vector<Evidence> seen;
    for (const Evidence& e : history) {
      ASSERT_TRUE(tally.Add(e));
      if (e.stack_id() == "s" && e.arch() == "gfx928") fix.Add(e);
      seen.push_back(e);
      const std::string where = absl::StrCat("seed ", seed, " after ", e.evidence_id());
      ExpectSameVerdict(reference::OldStackArchVerdict("s", "gfx928", seen), tally.StackArch(), where);
      for (const char* m : {"m1", "m2", "never-launched"}) {
        ExpectSameVerdict(reference::OldModelVerdict("s", "gfx928", m, seen), tally.Model(m),
                          absl::StrCat(where, " model ", m));
      }
      auto want_fix = reference::OldLearnedFixFor("s", "gfx928", seen);
      ASSERT_EQ(fix.fix().has_value(), want_fix.has_value()) << where;
      if (want_fix) EXPECT_EQ(fix.fix()->DebugString(), want_fix->DebugString()) << where;
      // And the batch functions, which fold the same way.
      EXPECT_EQ(LearnedFixFor("s", "gfx928", seen).has_value(), want_fix.has_value()) << where;
    }
    if (HasFailure()) return;  // one seed's report is enough
  }
}

Evidence ReadyLaunch(const std::string& id, int64_t at_ms) {
  Evidence e;
  e.set_evidence_id(id);
  e.set_stack_id("s");
  e.set_arch("gfx928");
  e.set_model("m");
  e.set_tp(4);
  e.set_kind(dcufleet::v1::EVIDENCE_LAUNCH);
  e.set_outcome(dcufleet::v1::LAUNCH_READY);
  e.set_at_ms(at_ms);
  return e;
}

TEST(VerdictTallyTest, ARowOlderThanTheNewestIsRefusedAndChangesNothing) {
  VerdictTally tally("s", "gfx928");
  ASSERT_TRUE(tally.Add(ReadyLaunch("ev-2", 2000)));
  Evidence older = ReadyLaunch("ev-1", 1000);
  older.set_outcome(dcufleet::v1::LAUNCH_FAILED);
  older.set_failure_class("triton_unsupported_gpu_target");
  EXPECT_FALSE(tally.Add(older));
  EXPECT_EQ(tally.StackArch().state(), dcufleet::v1::VERDICT_WORKS);
  EXPECT_EQ(tally.StackArch().failed_count(), 0);
  // Another key's row is not this tally's business, whatever its time.
  Evidence other = older;
  other.set_arch("gfx906");
  EXPECT_TRUE(tally.Add(other));
  EXPECT_EQ(tally.StackArch().failed_count(), 0);
}

TEST(VerdictTallyTest, AVerdictCountsEveryRowAndListsTheNewestThatDecided) {
  VerdictTally tally("s", "gfx928");
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(tally.Add(ReadyLaunch(absl::StrCat("ev-", i), 1000 + i)));
  Verdict v = tally.StackArch();
  EXPECT_EQ(v.ready_count(), 40);
  EXPECT_EQ(v.reason(), "works on gfx928: 40 launches ready (m TP=4), last 1970-01-01");
  ASSERT_EQ(v.evidence_ids_size(), kVerdictEvidenceIds);
  EXPECT_EQ(v.evidence_ids(0), absl::StrCat("ev-", 40 - kVerdictEvidenceIds));
  EXPECT_EQ(v.evidence_ids(kVerdictEvidenceIds - 1), "ev-39");
}

}  // namespace
}  // namespace dcu::modelkit
