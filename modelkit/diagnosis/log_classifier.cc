#include "modelkit/diagnosis/log_classifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_util.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/embedded_rules.h"
#include "modelkit/diagnosis/fallback_model.h"
#include "modelkit/diagnosis/log_normalizer.h"
#include "modelkit/diagnosis/context_condition.h"
#include "modelkit/diagnosis/log_context.h"
#include "modelkit/diagnosis/log_structure.h"
#include "re2/re2.h"
#include "re2/set.h"

namespace dcu::modelkit {

using dcufleet::v1::DiagnosisFinding;
using dcufleet::v1::DiagnosisResult;
using dcufleet::v1::DiagnosisRules;
using dcufleet::v1::FindingBasis;
using dcufleet::v1::MatchScope;
using dcufleet::v1::Remediation;
using dcufleet::v1::Rule;

namespace {

enum class PatternKind { kAny, kAll, kNotInLog };

re2::StringPiece Piece(absl::string_view s) { return re2::StringPiece(s.data(), s.size()); }

RE2::Options PatternOptions() {
  RE2::Options options;
  options.set_log_errors(false);
  // The rules are few but a Set's DFA over ~100 patterns needs room; with
  // too little RE2 reports out-of-memory and we would fall back to one
  // regex at a time.
  options.set_max_mem(64 << 20);
  return options;
}

bool FactHolds(absl::string_view value) {
  return !(value.empty() || value == "false" || value == "0" || value == "no" || value == "False");
}

// Replaces ${name} with captures ("log.<group>") or facts; unresolved names
// are kept verbatim and added to `missing`.
std::string Substitute(const std::string& text, const std::map<std::string, std::string>& captures,
                       const DiagnosisFacts& facts, std::set<std::string>* missing) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("${", i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    size_t close = text.find('}', open + 2);
    if (close == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, open - i);
    std::string name = text.substr(open + 2, close - open - 2);
    const std::string* value = nullptr;
    if (absl::StartsWith(name, "log.")) {
      auto it = captures.find(name.substr(4));
      if (it != captures.end() && !it->second.empty()) value = &it->second;
    } else {
      auto it = facts.find(name);
      if (it != facts.end() && !it->second.empty()) value = &it->second;
    }
    if (value != nullptr) {
      out.append(*value);
    } else {
      out.append(text, open, close - open + 1);
      missing->insert(name);
    }
    i = close + 1;
  }
  return out;
}

// Later lines, lines after a Traceback, exception lines and ERROR lines
// weigh more; warnings less. A launch dies at its last error, and the
// messages after a traceback's last frame are the cause; a warning printed
// on the way out (NCCL's destroy_process_group) is not.
double LineWeight(const NormalizedLine& line, int index, int count, int first_traceback) {
  double position = count > 1 ? static_cast<double>(index) / (count - 1) : 1.0;
  double w = 0.7 + 0.15 * position;
  if (line.exception) {
    w += 0.1;
  } else if (line.severity == LineSeverity::kError) {
    w += 0.07;
  }
  if (first_traceback >= 0 && index > first_traceback) w += 0.05;
  if (line.severity == LineSeverity::kWarning) {
    w *= 0.6;
  } else if (line.severity == LineSeverity::kDebugInfo) {
    w *= 0.9;
  }
  return std::min(w, 1.0);
}

// Where a candidate evidence line sits in the log's structure decides how
// much it weighs, before its position and level do: a line of the terminal
// error is what the run died of; a line of an earlier raised error (the root
// cause of a chain, another process's exception) comes next; any other line
// (a warning on the way, echoed config, an ERROR log message) weighs less
// than both, however late or loud it is.
constexpr double kTerminalErrorWeight = 1.0;
constexpr double kRaisedErrorWeight = 0.9;        // + up to 0.05 for later ones
constexpr double kFollowOnErrorFactor = 0.95;     // "See root cause above"
constexpr double kOtherLineFactor = 0.88;         // times LineWeight
// Frames say where the run died, not why: a frames-only finding stays below
// a real error line of any class (their rules' confidences are low too).
constexpr double kOutermostFrameWeight = 0.7;
constexpr double kInnermostFrameWeight = 0.8;

struct Candidate {
  int line = 0;
  double weight = 0.0;
  FindingBasis basis = dcufleet::v1::FINDING_BASIS_LOG_LINE;
};

// The weight and basis of a line matched by a rule whose scope is not FRAMES.
Candidate WeighLine(const LogStructure& structure, const std::vector<NormalizedLine>& normalized,
                    int line, int first_traceback) {
  const int count = static_cast<int>(normalized.size());
  Candidate cand;
  cand.line = line;
  int error = structure.error_of_line[line];
  const bool in_cut_tail =
      std::binary_search(structure.cut_traceback_tail.begin(), structure.cut_traceback_tail.end(),
                         line);
  if ((error >= 0 && error == structure.terminal_error) || in_cut_tail) {
    cand.weight = kTerminalErrorWeight;
    cand.basis = dcufleet::v1::FINDING_BASIS_TERMINAL_ERROR;
  } else if (error >= 0) {
    double position = count > 1 ? static_cast<double>(line) / (count - 1) : 1.0;
    cand.weight = kRaisedErrorWeight + 0.05 * position;
    if (structure.errors[error].follow_on) cand.weight *= kFollowOnErrorFactor;
    cand.basis = dcufleet::v1::FINDING_BASIS_RAISED_ERROR;
  } else {
    cand.weight = kOtherLineFactor * LineWeight(normalized[line], line, count, first_traceback);
    cand.basis = dcufleet::v1::FINDING_BASIS_LOG_LINE;
  }
  return cand;
}

// Frame line -> its weight, for the frames of the traceback the run died in
// (0 for every other line). Inner frames weigh more: the innermost frame
// that a rule knows is the most specific statement of where it died.
// Only when the error line is missing: with an error line, the error says
// why, and a frame rule would only second-guess it.
std::vector<double> TerminalFrameWeights(const LogStructure& structure, int count) {
  std::vector<double> weights(count, 0.0);
  if (!structure.ErrorLineMissing()) return weights;
  const auto& frames = structure.tracebacks[structure.terminal_traceback].frames;
  for (size_t f = 0; f < frames.size(); ++f) {
    double depth = frames.size() > 1 ? static_cast<double>(f) / (frames.size() - 1) : 1.0;
    weights[frames[f].line] =
        kOutermostFrameWeight + (kInnermostFrameWeight - kOutermostFrameWeight) * depth;
  }
  return weights;
}

std::string FramesExplanation(const std::string& frame_text) {
  std::string where = frame_text.substr(0, std::min<size_t>(frame_text.size(), 200));
  return absl::StrCat("inferred from the traceback frames; the error line is missing (the run "
                      "was last seen in: ", where, ")");
}

std::string FollowOnSubject(const RaisedError& error) {
  size_t newline = error.message.find('\n');
  return absl::StrCat(error.type, ": ", error.message.substr(0, newline));
}

void FillTerminalError(const LogStructure& structure, dcufleet::v1::TerminalError* out) {
  constexpr size_t kFramesReported = 8;
  const int shown = structure.terminal_error >= 0 ? structure.terminal_error
                                                  : structure.error_before_cut_traceback;
  if (shown >= 0) {
    const RaisedError& error = structure.errors[shown];
    switch (error.origin) {
      case ErrorOrigin::kPythonException:
        out->set_origin(dcufleet::v1::RAISED_ERROR_ORIGIN_PYTHON_EXCEPTION);
        break;
      case ErrorOrigin::kCppException:
        out->set_origin(dcufleet::v1::RAISED_ERROR_ORIGIN_CPP_EXCEPTION);
        break;
      case ErrorOrigin::kGoPanic:
        out->set_origin(dcufleet::v1::RAISED_ERROR_ORIGIN_GO_PANIC);
        break;
      case ErrorOrigin::kNativeError:
        out->set_origin(dcufleet::v1::RAISED_ERROR_ORIGIN_NATIVE_ERROR);
        break;
    }
    out->set_type(error.type);
    out->set_message(error.message);
    out->set_line(error.first_line + 1);
  }
  if (structure.terminal_traceback >= 0) {
    const auto& frames = structure.tracebacks[structure.terminal_traceback].frames;
    size_t first = frames.size() > kFramesReported ? frames.size() - kFramesReported : 0;
    for (size_t f = first; f < frames.size(); ++f) {
      auto* frame = out->add_frames();
      frame->set_line(frames[f].line + 1);
      frame->set_file(frames[f].file);
      frame->set_function(frames[f].function);
    }
    if (structure.ErrorLineMissing()) out->set_error_line_missing(true);
  }
}

struct RuleHit {
  int rule = 0;
  double score = 0.0;
  std::vector<Candidate> lines;  // best first
  // What the rule's `when` rested on (DiagnosisFinding.conditions).
  std::vector<std::string> conditions;
};

}  // namespace

struct LogClassifier::Compiled {
  struct PatternRef {
    int rule = 0;
    PatternKind kind = PatternKind::kAny;
    std::unique_ptr<RE2> re;
  };
  struct CompiledRule {
    MatchScope scope = dcufleet::v1::MATCH_SCOPE_ANY_LINE;
    // MATCH_SCOPE_EXCEPTION_TYPE: the `any` patterns, matched against each
    // raised error's type rather than lines (they are not in the set).
    std::vector<std::unique_ptr<RE2>> type_patterns;
    std::vector<int> any;
    std::vector<int> all;
    std::vector<int> not_in_log;
    std::vector<std::unique_ptr<RE2>> not_on_line;
    // Per Rule.hidden_cause: the set indices of its when_log_has patterns.
    std::vector<std::vector<int>> hidden_cause_context;
    // Rule.when, and per Rule.hidden_cause its `when`.
    CompiledCondition when;
    std::vector<CompiledCondition> hidden_cause_when;
  };

  DiagnosisRules rules;
  std::string source;
  std::vector<CompiledRule> compiled_rules;
  std::vector<PatternRef> patterns;
  std::unique_ptr<RE2::Set> set;
  // The set's patterns from here on are LogContextPatterns(), in order.
  int first_context_pattern = 0;
  // Every follow_on_error pattern in one alternation: one match per raised
  // error, however many patterns the rules list.
  std::unique_ptr<RE2> follow_on;
  // Failure class -> the first rule of that class (a hidden cause's
  // remediation is that rule's).
  std::map<std::string, int> first_rule_of_class;
  int unknown_rule = -1;
  std::shared_ptr<const FallbackModel> fallback;
  std::string fallback_source;

  bool IsFollowOn(const RaisedError& error) const {
    if (follow_on == nullptr) return false;
    return RE2::PartialMatch(Piece(FollowOnSubject(error)), *follow_on);
  }

  // Indices of the patterns matching `text`.
  void Match(absl::string_view text, std::vector<int>* ids) const {
    ids->clear();
    RE2::Set::ErrorInfo error;
    if (set->Match(Piece(text), ids, &error)) return;
    if (error.kind == RE2::Set::kNoError) return;  // no match
    // The DFA ran out of memory on this line: match one pattern at a time.
    ids->clear();
    for (size_t p = 0; p < patterns.size(); ++p) {
      if (RE2::PartialMatch(Piece(text), *patterns[p].re)) ids->push_back(static_cast<int>(p));
    }
  }
};

LogClassifier::LogClassifier(std::unique_ptr<Compiled> compiled) : compiled_(std::move(compiled)) {}
LogClassifier::LogClassifier(LogClassifier&&) noexcept = default;
LogClassifier& LogClassifier::operator=(LogClassifier&&) noexcept = default;
LogClassifier::~LogClassifier() = default;

void LogClassifier::SetFallback(std::shared_ptr<const FallbackModel> model, std::string source) {
  compiled_->fallback = std::move(model);
  compiled_->fallback_source = std::move(source);
}

bool LogClassifier::has_fallback() const { return compiled_->fallback != nullptr; }

std::vector<std::string> LogClassifier::FallbackFeaturesOf(const std::vector<std::string>& lines,
                                                           bool* sees_error) const {
  const Compiled& c = *compiled_;
  std::vector<NormalizedLine> normalized(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) normalized[i] = NormalizeLogLine(lines[i]);
  const LogStructure structure =
      ReadLogStructure(normalized, [&c](const RaisedError& e) { return c.IsFollowOn(e); });
  if (sees_error != nullptr) *sees_error = FallbackSeesError(structure);
  return FallbackFeatures(normalized, structure);
}

int LogClassifier::rule_count() const { return compiled_->rules.rule_size(); }
int LogClassifier::pattern_count() const { return static_cast<int>(compiled_->patterns.size()); }

absl::StatusOr<LogClassifier> LoadClassifier(const std::string& rules_path,
                                             const DiagnosisActionSet& supported) {
  const std::string source =
      rules_path.empty() ? std::string(kEmbeddedDiagnosisRulesName) : rules_path;
  auto rules = rules_path.empty()
                   ? ParseDiagnosisRules(EmbeddedDiagnosisRulesText(), kEmbeddedDiagnosisRulesName,
                                         supported)
                   : LoadDiagnosisRulesFile(rules_path, supported);
  if (!rules.ok()) return rules.status();
  return LogClassifier::Create(*rules, source);
}

absl::StatusOr<LogClassifier> BuiltInClassifier(const DiagnosisActionSet& supported) {
  return LoadClassifier("", supported);
}

absl::StatusOr<LogClassifier> LogClassifier::Create(const DiagnosisRules& rules,
                                                    std::string rules_source) {
  std::string source = rules_source.empty() ? "<rules>" : rules_source;
  // Classifying needs the vocabulary only; whether an action is executed is
  // decided where the rules are loaded (LoadDiagnosisRulesFile's `supported`).
  DCU_RETURN_IF_ERROR(ValidateDiagnosisRules(rules, source, AllDiagnosisActions()));
  auto compiled = std::make_unique<Compiled>();
  compiled->rules = rules;
  compiled->source = rules_source;
  compiled->set = std::make_unique<RE2::Set>(PatternOptions(), RE2::UNANCHORED);
  compiled->compiled_rules.resize(rules.rule_size());

  auto add = [&](int rule_index, PatternKind kind, const std::string& pattern,
                 std::vector<int>* ids) -> absl::Status {
    const Rule& rule = rules.rule(rule_index);
    auto re = std::make_unique<RE2>(pattern, PatternOptions());
    std::string error;
    int id = re->ok() ? compiled->set->Add(Piece(pattern), &error) : -1;
    if (!re->ok() || id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": rule '", rule.id(), "': pattern '", pattern,
                       "' does not compile: ", re->ok() ? error : re->error()));
    }
    if (id != static_cast<int>(compiled->patterns.size())) {
      return absl::InternalError("RE2::Set returned an unexpected pattern index");
    }
    compiled->patterns.push_back({rule_index, kind, std::move(re)});
    ids->push_back(id);
    return absl::OkStatus();
  };

  for (int r = 0; r < rules.rule_size(); ++r) {
    const Rule& rule = rules.rule(r);
    Compiled::CompiledRule& cr = compiled->compiled_rules[r];
    if (rule.failure_class() == "unknown" && compiled->unknown_rule < 0) compiled->unknown_rule = r;
    cr.scope = rule.scope();
    compiled->first_rule_of_class.emplace(rule.failure_class(), r);
    for (const std::string& p : rule.any()) {
      if (cr.scope == dcufleet::v1::MATCH_SCOPE_EXCEPTION_TYPE) {
        auto re = std::make_unique<RE2>(p, PatternOptions());
        if (!re->ok()) {
          return absl::InvalidArgumentError(absl::StrCat(source, ": rule '", rule.id(),
                                                         "': pattern '", p,
                                                         "' does not compile: ", re->error()));
        }
        cr.type_patterns.push_back(std::move(re));
        continue;
      }
      DCU_RETURN_IF_ERROR(add(r, PatternKind::kAny, p, &cr.any));
    }
    for (const std::string& p : rule.all()) DCU_RETURN_IF_ERROR(add(r, PatternKind::kAll, p, &cr.all));
    for (const std::string& p : rule.not_in_log()) {
      DCU_RETURN_IF_ERROR(add(r, PatternKind::kNotInLog, p, &cr.not_in_log));
    }
    for (const auto& hidden : rule.hidden_cause()) {
      std::vector<int> ids;
      for (const std::string& p : hidden.when_log_has()) {
        DCU_RETURN_IF_ERROR(add(r, PatternKind::kNotInLog, p, &ids));
      }
      cr.hidden_cause_context.push_back(std::move(ids));
      DCU_ASSIGN_OR_RETURN(CompiledCondition when,
                           CompiledCondition::Compile(hidden.when(), absl::StrCat(
                               source, ": rule '", rule.id(), "': hidden_cause")));
      cr.hidden_cause_when.push_back(std::move(when));
    }
    DCU_ASSIGN_OR_RETURN(cr.when, CompiledCondition::Compile(
                                      rule.when(), absl::StrCat(source, ": rule '", rule.id(), "'")));
    for (const std::string& p : rule.not_on_line()) {
      auto re = std::make_unique<RE2>(p, PatternOptions());
      if (!re->ok()) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": rule '", rule.id(),
                                                       "': not_on_line pattern '", p,
                                                       "' does not compile: ", re->error()));
      }
      cr.not_on_line.push_back(std::move(re));
    }
  }
  // The context patterns (log_context.h) ride in the same set: no pass of
  // their own over the log.
  compiled->first_context_pattern = static_cast<int>(compiled->patterns.size());
  for (const ContextPattern& p : LogContextPatterns()) {
    auto re = std::make_unique<RE2>(p.pattern, PatternOptions());
    std::string error;
    const int id = re->ok() ? compiled->set->Add(Piece(p.pattern), &error) : -1;
    if (!re->ok() || id != static_cast<int>(compiled->patterns.size())) {
      return absl::InternalError(absl::StrCat("log context pattern '", p.pattern,
                                              "' does not compile: ", re->ok() ? error : re->error()));
    }
    compiled->patterns.push_back({-1, PatternKind::kNotInLog, std::move(re)});
  }
  if (rules.follow_on_error_size() > 0) {
    std::string alternation;
    for (const std::string& p : rules.follow_on_error()) {
      absl::StrAppend(&alternation, alternation.empty() ? "" : "|", "(?:", p, ")");
    }
    compiled->follow_on = std::make_unique<RE2>(alternation, PatternOptions());
    if (!compiled->follow_on->ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": follow_on_error patterns do not "
                                                     "compile: ", compiled->follow_on->error()));
    }
  }
  if (compiled->first_context_pattern == 0) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": the rules have no patterns"));
  }
  if (!compiled->set->Compile()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(source, ": RE2 could not compile the set of ", compiled->patterns.size(),
                     " patterns (out of memory)"));
  }
  return LogClassifier(std::move(compiled));
}

DiagnosisResult LogClassifier::Classify(const std::vector<std::string>& lines,
                                        const ClassifyOptions& options) const {
  const Compiled& c = *compiled_;
  const int count = static_cast<int>(lines.size());
  DiagnosisResult result;
  result.set_lines_examined(count);
  result.set_rules_source(c.source);

  // One pass: normalise and match the set.
  std::vector<NormalizedLine> normalized(count);
  std::vector<std::vector<int>> hits(c.patterns.size());
  std::vector<int> ids;
  int first_traceback = -1;
  for (int i = 0; i < count; ++i) {
    normalized[i] = NormalizeLogLine(lines[i]);
    const std::string& text = normalized[i].text;
    if (text.empty()) continue;
    c.Match(text, &ids);
    for (int id : ids) hits[id].push_back(i);
  }

  // Read the structure: raised errors, the terminal one, its frames.
  const LogStructure structure =
      ReadLogStructure(normalized, [&c](const RaisedError& e) { return c.IsFollowOn(e); });
  // A raised error whose message spans lines (a paste or a terminal that
  // wrapped "... is less than desired" / "GPU memory utilization (0.9, ...)",
  // a message printed with embedded newlines) is also matched as one text,
  // joined with a blank and without one (a wrap inside a word); a pattern
  // that only the joined text matches counts on the error's header line.
  std::map<int, std::string> joined_message;  // header line -> spaced text
  for (const RaisedError& error : structure.errors) {
    if (error.last_line <= error.first_line || error.message.find('\n') == std::string::npos) {
      continue;
    }
    std::string spaced = absl::StrCat(error.type, ": ", error.message);
    std::string tight = spaced;
    std::replace(spaced.begin(), spaced.end(), '\n', ' ');
    joined_message[error.first_line] = spaced;
    tight.erase(std::remove(tight.begin(), tight.end(), '\n'), tight.end());
    for (const std::string* joined : {&spaced, &tight}) {
      c.Match(*joined, &ids);
      for (int id : ids) {
        std::vector<int>& at = hits[id];
        auto pos = std::lower_bound(at.begin(), at.end(), error.first_line);
        // Already matched on one of the error's own lines: nothing to add.
        if (pos != at.end() && *pos <= error.last_line) continue;
        at.insert(pos, error.first_line);
      }
    }
  }
  const std::vector<double> frame_weight = TerminalFrameWeights(structure, count);
  for (const Traceback& tb : structure.tracebacks) {
    if (tb.has_header) {
      first_traceback = tb.first_line;
      break;
    }
  }
  if (structure.terminal_error >= 0 || structure.terminal_traceback >= 0 ||
      structure.error_before_cut_traceback >= 0) {
    FillTerminalError(structure, result.mutable_terminal_error());
  }
  {
    const std::vector<std::vector<int>> context_hits(hits.begin() + c.first_context_pattern, hits.end());
    dcufleet::v1::LogContext context = ReadLogContext(normalized, context_hits, structure);
    if (context.ByteSizeLong() > 0) *result.mutable_context() = std::move(context);
  }
  const dcufleet::v1::LogContext& log_context = result.context();

  std::vector<RuleHit> rule_hits;
  for (int r = 0; r < c.rules.rule_size(); ++r) {
    const Compiled::CompiledRule& cr = c.compiled_rules[r];
    bool suppressed = false;
    for (int id : cr.not_in_log) suppressed |= !hits[id].empty();
    if (suppressed) continue;
    bool all_present = true;
    for (int id : cr.all) all_present &= !hits[id].empty();
    const bool has_any = !cr.any.empty() || !cr.type_patterns.empty();
    if (!all_present || (!has_any && cr.all.empty())) continue;
    std::vector<std::string> conditions;
    if (!cr.when.empty() && !cr.when.Holds(options.facts, log_context, &conditions)) continue;

    std::vector<int> candidate_lines;
    for (int id : has_any ? cr.any : cr.all) {
      for (int line : hits[id]) {
        // The scope decides which matching lines count.
        bool in_scope = true;
        if (has_any && cr.scope == dcufleet::v1::MATCH_SCOPE_EXCEPTION_MESSAGE) {
          in_scope = structure.error_of_line[line] >= 0;
        } else if (has_any && cr.scope == dcufleet::v1::MATCH_SCOPE_FRAMES) {
          in_scope = frame_weight[line] > 0.0;
        }
        if (in_scope) candidate_lines.push_back(line);
      }
    }
    for (const RaisedError& error : structure.errors) {
      for (const auto& re : cr.type_patterns) {
        if (RE2::PartialMatch(Piece(error.type), *re)) {
          candidate_lines.push_back(error.first_line);
          break;
        }
      }
    }
    std::sort(candidate_lines.begin(), candidate_lines.end());
    candidate_lines.erase(std::unique(candidate_lines.begin(), candidate_lines.end()),
                          candidate_lines.end());
    RuleHit hit;
    hit.rule = r;
    hit.conditions = std::move(conditions);
    std::set<absl::string_view> seen_text;
    for (int line : candidate_lines) {
      const std::string& text = normalized[line].text;
      bool excluded = false;
      for (const auto& re : cr.not_on_line) excluded |= RE2::PartialMatch(Piece(text), *re);
      if (excluded) continue;
      if (cr.scope == dcufleet::v1::MATCH_SCOPE_FRAMES && has_any) {
        hit.lines.push_back(
            {line, frame_weight[line], dcufleet::v1::FINDING_BASIS_TRACEBACK_FRAMES});
      } else {
        hit.lines.push_back(WeighLine(structure, normalized, line, first_traceback));
      }
    }
    if (hit.lines.empty()) continue;
    std::stable_sort(hit.lines.begin(), hit.lines.end(),
                     [](const Candidate& a, const Candidate& b) {
                       if (a.weight != b.weight) return a.weight > b.weight;
                       return a.line > b.line;
                     });
    // The same message printed by every rank is one piece of evidence.
    std::vector<Candidate> unique_lines;
    for (const Candidate& cand : hit.lines) {
      if (seen_text.insert(normalized[cand.line].text).second) unique_lines.push_back(cand);
    }
    hit.lines = std::move(unique_lines);
    hit.score = c.rules.rule(r).confidence() * hit.lines.front().weight;
    rule_hits.push_back(std::move(hit));
  }

  // One finding per class: the best rule of the class.
  auto better = [&](const RuleHit& a, const RuleHit& b) {
    if (a.score != b.score) return a.score > b.score;
    int pa = c.rules.rule(a.rule).priority();
    int pb = c.rules.rule(b.rule).priority();
    if (pa != pb) return pa > pb;
    return a.lines.front().line > b.lines.front().line;
  };
  std::sort(rule_hits.begin(), rule_hits.end(), better);
  std::set<std::string> classes_done;

  for (const RuleHit& hit : rule_hits) {
    const Rule& rule = c.rules.rule(hit.rule);
    if (!classes_done.insert(rule.failure_class()).second) continue;
    DiagnosisFinding* finding = result.add_findings();
    finding->set_failure_class(rule.failure_class());
    finding->set_rule_id(rule.id());
    finding->set_confidence(std::round(hit.score * 1000.0) / 1000.0);
    finding->set_basis(hit.lines.front().basis);
    if (hit.lines.front().basis == dcufleet::v1::FINDING_BASIS_TRACEBACK_FRAMES) {
      finding->set_explanation(
          FramesExplanation(normalized[hit.lines.front().line].text));
    }
    int kept = 0;
    for (const Candidate& cand : hit.lines) {
      if (kept++ >= std::max(1, options.max_evidence_lines)) break;
      auto* evidence = finding->add_evidence();
      evidence->set_line(cand.line + 1);
      evidence->set_text(normalized[cand.line].text);
    }

    // Named captures of the rule's patterns, best line first.
    std::map<std::string, std::string> captures;
    const Compiled::CompiledRule& cr = c.compiled_rules[hit.rule];
    for (const Candidate& cand : hit.lines) {
      auto joined = joined_message.find(cand.line);
      for (const std::string* text_ptr :
           {&normalized[cand.line].text,
            joined != joined_message.end() ? &joined->second : &normalized[cand.line].text}) {
        const std::string& text = *text_ptr;
        for (const std::vector<int>* group : {&cr.any, &cr.all}) {
          for (int id : *group) {
            const RE2& re = *c.patterns[id].re;
            int n = re.NumberOfCapturingGroups();
            if (n <= 0) continue;
            std::vector<re2::StringPiece> submatch(n + 1);
            if (!re.Match(Piece(text), 0, text.size(), RE2::UNANCHORED, submatch.data(), n + 1)) {
              continue;
            }
            for (const auto& [name, index] : re.NamedCapturingGroups()) {
              if (index <= n && submatch[index].data() != nullptr && !captures.count(name)) {
                captures[name] = std::string(submatch[index].data(), submatch[index].size());
              }
            }
          }
        }
      }
    }
    for (const auto& [name, value] : captures) (*finding->mutable_captures())[name] = value;
    for (const std::string& c : hit.conditions) finding->add_conditions(c);

    // Choose the remediation option.
    int chosen = -1;
    std::set<std::string> absent_required;
    for (int o = 0; o < rule.remediation_size() && chosen < 0; ++o) {
      const Remediation& option = rule.remediation(o);
      bool skip = false;
      for (const std::string& fact : option.skip_if_facts()) {
        auto it = options.facts.find(fact);
        skip |= it != options.facts.end() && FactHolds(it->second);
      }
      if (skip) continue;
      bool eligible = true;
      std::set<std::string> absent;
      for (const std::string& fact : option.required_facts()) {
        auto it = options.facts.find(fact);
        if (it != options.facts.end()) {
          eligible &= FactHolds(it->second);
        } else if (options.facts_complete) {
          eligible = false;
        } else {
          absent.insert(fact);
        }
      }
      if (eligible) {
        chosen = o;
        absent_required = std::move(absent);
      }
    }
    if (chosen < 0) chosen = rule.remediation_size() - 1;
    std::set<std::string> missing = absent_required;
    auto render = [&](const Remediation& templ, Remediation* out, std::set<std::string>* miss) {
      out->set_kind(templ.kind());
      out->set_action(templ.action());
      out->set_summary(Substitute(templ.summary(), captures, options.facts, miss));
      for (const auto& [key, value] : templ.params()) {
        (*out->mutable_params())[key] = Substitute(value, captures, options.facts, miss);
      }
    };
    render(rule.remediation(chosen), finding->mutable_remediation(), &missing);
    for (int o = 0; o < rule.remediation_size(); ++o) {
      if (o == chosen) continue;
      std::set<std::string> ignored;
      render(rule.remediation(o), finding->add_alternatives(), &ignored);
    }
    for (const std::string& name : missing) finding->add_missing_facts(name);
  }

  // Causes the findings usually hide, after them, in the order they will
  // bite (the finding's order, then the rule's).
  const int found = result.findings_size();
  for (int f = 0; f < found; ++f) {
    const DiagnosisFinding first = result.findings(f);
    int r = -1;
    for (int k = 0; k < c.rules.rule_size() && r < 0; ++k) {
      if (c.rules.rule(k).id() == first.rule_id()) r = k;
    }
    if (r < 0) continue;
    const Rule& rule = c.rules.rule(r);
    for (int h = 0; h < rule.hidden_cause_size(); ++h) {
      const auto& hidden = rule.hidden_cause(h);
      if (classes_done.count(hidden.failure_class())) continue;
      bool context = true;
      for (int id : c.compiled_rules[r].hidden_cause_context[h]) context &= !hits[id].empty();
      std::vector<std::string> conditions;
      context = context && c.compiled_rules[r].hidden_cause_when[h].Holds(
                               options.facts, result.context(), &conditions);
      if (!context) continue;
      classes_done.insert(hidden.failure_class());
      DiagnosisFinding* finding = result.add_findings();
      finding->set_failure_class(hidden.failure_class());
      finding->set_confidence(std::round(first.confidence() * hidden.confidence() * 1000.0) /
                              1000.0);
      finding->set_basis(dcufleet::v1::FINDING_BASIS_EXPECTED_NEXT);
      finding->set_explanation(absl::StrCat("expected once ", first.failure_class(),
                                            " is fixed: ", hidden.explanation()));
      *finding->mutable_evidence() = first.evidence();
      for (const std::string& cond : conditions) finding->add_conditions(cond);
      auto source = c.first_rule_of_class.find(hidden.failure_class());
      if (source != c.first_rule_of_class.end()) {
        const Rule& remedy = c.rules.rule(source->second);
        finding->set_rule_id(remedy.id());
        std::set<std::string> missing;
        const Remediation& templ = remedy.remediation(remedy.remediation_size() - 1);
        Remediation* out = finding->mutable_remediation();
        out->set_kind(templ.kind());
        out->set_action(templ.action());
        out->set_summary(Substitute(templ.summary(), {}, options.facts, &missing));
        for (const auto& [key, value] : templ.params()) {
          (*out->mutable_params())[key] = Substitute(value, {}, options.facts, &missing);
        }
      }
    }
  }

  // Nothing recognised by a rule: the learned fallback may name a class,
  // when the log shows an error at all and the model is confident enough.
  std::string fallback_note;
  if (result.findings_size() == 0 && c.fallback != nullptr && options.use_fallback &&
      FallbackSeesError(structure)) {
    FallbackGuess guess = c.fallback->Predict(FallbackFeatures(normalized, structure));
    const bool is_class = !guess.failure_class.empty() && guess.failure_class != "unknown" &&
                          guess.failure_class != "none";
    char conf[16];
    std::snprintf(conf, sizeof(conf), "%.2f", guess.confidence);
    char threshold[16];
    std::snprintf(threshold, sizeof(threshold), "%.2f", c.fallback->threshold());
    if (is_class && guess.confidence >= c.fallback->threshold()) {
      DiagnosisFinding* finding = result.add_findings();
      finding->set_failure_class(guess.failure_class);
      finding->set_rule_id(absl::StrCat("learned_fallback:", guess.failure_class));
      finding->set_confidence(
          std::round(kFallbackConfidenceScale * guess.confidence * 1000.0) / 1000.0);
      finding->set_basis(dcufleet::v1::FINDING_BASIS_LEARNED_FALLBACK);
      finding->set_explanation(absl::StrCat(
          "no rule matched; statistical guess of the learned fallback (", c.fallback_source,
          ", Naive Bayes, posterior ", conf, " >= threshold ", threshold, "; runner-up ",
          guess.runner_up, "); the terms that decided: ",
          guess.deciding_terms.empty() ? std::string("(none)")
                                       : absl::StrJoin(guess.deciding_terms, ", ")));
      const int line = structure.terminal_error >= 0
                           ? structure.errors[structure.terminal_error].first_line
                       : structure.error_before_cut_traceback >= 0
                           ? structure.errors[structure.error_before_cut_traceback].first_line
                       : structure.terminal_traceback >= 0 &&
                               !structure.tracebacks[structure.terminal_traceback].frames.empty()
                           ? structure.tracebacks[structure.terminal_traceback].frames.back().line
                           : -1;
      if (line >= 0) {
        auto* evidence = finding->add_evidence();
        evidence->set_line(line + 1);
        evidence->set_text(normalized[line].text);
      }
      // Only a person acts on a guess: the class's rule remediation is
      // named as advice, never executed (no env/argv change, no failover
      // that would count against the stack).
      std::string advice;
      auto source = c.first_rule_of_class.find(guess.failure_class);
      if (source != c.first_rule_of_class.end()) {
        const Rule& remedy = c.rules.rule(source->second);
        std::set<std::string> ignored;
        advice = Substitute(remedy.remediation(remedy.remediation_size() - 1).summary(), {},
                            options.facts, &ignored);
        // Placeholders the log would have filled: say what the rule is for.
        if (!ignored.empty()) advice = remedy.description();
      }
      Remediation* out = finding->mutable_remediation();
      out->set_kind(dcufleet::v1::REMEDIATION_KIND_HUMAN);
      out->set_action("human");
      out->set_summary(absl::StrCat(
          "Statistical guess, not a rule: this looks like ", guess.failure_class,
          ". Check the evidence before acting", advice.empty() ? "" : "; that class's usual fix: ",
          advice));
      return result;
    }
    fallback_note = absl::StrCat("the learned fallback abstained (best guess ",
                                 guess.failure_class, " at ", conf, ", below its threshold ",
                                 threshold, ")");
  }

  if (result.findings_size() == 0) {
    DiagnosisFinding* finding = result.add_findings();
    finding->set_failure_class("unknown");
    if (!fallback_note.empty()) finding->set_explanation(fallback_note);
    // Show what a person would read first: the terminal error, else the
    // last exception or error line.
    std::vector<int> picks;
    if (structure.terminal_error >= 0) {
      picks.push_back(structure.errors[structure.terminal_error].first_line);
    }
    for (int i = count - 1; i >= 0 && picks.empty(); --i) {
      if (normalized[i].exception) picks.push_back(i);
    }
    for (int i = count - 1; i >= 0 && picks.empty(); --i) {
      if (normalized[i].severity == LineSeverity::kError) picks.push_back(i);
    }
    for (int i = count - 1; i >= 0 && picks.empty(); --i) {
      if (!normalized[i].text.empty()) picks.push_back(i);
    }
    for (int i : picks) {
      auto* evidence = finding->add_evidence();
      evidence->set_line(i + 1);
      evidence->set_text(normalized[i].text);
    }
    if (c.unknown_rule >= 0) {
      const Rule& rule = c.rules.rule(c.unknown_rule);
      finding->set_rule_id(rule.id());
      finding->set_confidence(rule.confidence());
      std::set<std::string> ignored;
      const Remediation& templ = rule.remediation(0);
      Remediation* out = finding->mutable_remediation();
      out->set_kind(templ.kind());
      out->set_action(templ.action());
      out->set_summary(Substitute(templ.summary(), {}, options.facts, &ignored));
      for (const auto& [key, value] : templ.params()) {
        (*out->mutable_params())[key] = Substitute(value, {}, options.facts, &ignored);
      }
    } else {
      finding->set_confidence(0.0);
      finding->mutable_remediation()->set_kind(dcufleet::v1::REMEDIATION_KIND_HUMAN);
      finding->mutable_remediation()->set_action("human");
      finding->mutable_remediation()->set_summary("No rule matched: read the evidence lines");
    }
  }
  return result;
}

DiagnosisResult LogClassifier::ClassifyText(absl::string_view text,
                                            const ClassifyOptions& options) const {
  return Classify(SplitLogLines(text), options);
}

std::vector<std::string> SplitLogLines(absl::string_view text, int max_lines) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (std::string& line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
  }
  if (max_lines > 0 && static_cast<int>(lines.size()) > max_lines) {
    lines.erase(lines.begin(), lines.end() - max_lines);
  }
  return lines;
}

}  // namespace dcu::modelkit
