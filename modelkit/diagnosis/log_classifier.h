#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/diagnosis.pb.h"
#include "modelkit/diagnosis/diagnosis_rules.h"

namespace re2 {
class RE2;
class Set;
}  // namespace re2

namespace dcu::modelkit {

class FallbackModel;

// Facts the controller knows when it diagnoses a launch, used to choose a
// remediation option and fill ${...} placeholders, e.g.
//   "stack.accepts_kv_cache_memory_bytes" -> "true"
//   "memory_plan.kv_cache_bytes"          -> "25769803776"
//   "stack.ld_library_path_recipe"        -> "/opt/dtk/.hyhal/rocm_smi/lib:..."
//   "model.config_audit_clean"            -> "true"
//   "model.name"                          -> "qwen3-32b"
using DiagnosisFacts = std::map<std::string, std::string>;

struct ClassifyOptions {
  DiagnosisFacts facts;
  // True when `facts` holds everything the caller knows (the controller):
  // an absent fact then counts as false. False offline, where an absent fact
  // is unknown and reported in DiagnosisFinding.missing_facts.
  bool facts_complete = false;
  // Evidence lines kept per finding.
  int max_evidence_lines = 3;
  // Consult the learned fallback (SetFallback) when no rule matched.
  bool use_fallback = true;
};

// Classifies a failed launch's log tail into ordered findings.
//
// Every line is normalised (NormalizeLogLine), then matched once against one
// RE2::Set holding every rule pattern, so the cost is one DFA pass over the
// text plus per-line work only for the few lines that match. Each matching
// line is weighted by where it sits: later lines, lines after a Python
// "Traceback", exception lines and ERROR-level lines weigh more, WARNING
// lines less; a finding's confidence is its rule's confidence times the
// weight of its best line. One finding per failure class, best first; the
// class "unknown" when nothing matches.
//
// Thread-safe: Classify is const and may run concurrently.
class LogClassifier {
 public:
  // Compiles the rules (which should come from ParseDiagnosisRules /
  // LoadDiagnosisRulesFile; they are validated again). INVALID_ARGUMENT with
  // the rule id when a pattern does not compile; RESOURCE_EXHAUSTED if the
  // pattern set is too large for RE2.
  static absl::StatusOr<LogClassifier> Create(const dcufleet::v1::DiagnosisRules& rules,
                                              std::string rules_source = "");

  LogClassifier(LogClassifier&&) noexcept;
  LogClassifier& operator=(LogClassifier&&) noexcept;
  ~LogClassifier();

  dcufleet::v1::DiagnosisResult Classify(const std::vector<std::string>& lines,
                                         const ClassifyOptions& options = {}) const;
  // Splits `text` on '\n' (dropping a trailing '\r') and classifies it.
  dcufleet::v1::DiagnosisResult ClassifyText(absl::string_view text,
                                             const ClassifyOptions& options = {}) const;

  int rule_count() const;
  int pattern_count() const;

  // The learned fallback (fallback_model.h): when no rule matched and the log
  // shows a raised error or a traceback, a model confident above its
  // threshold gives a finding with basis FINDING_BASIS_LEARNED_FALLBACK, a
  // confidence below any rule's (kFallbackConfidenceScale times its
  // posterior) and a remediation that only asks a person
  // (REMEDIATION_KIND_HUMAN): nothing is changed on a statistical guess.
  // `source` names the model in explanations. nullptr: no fallback.
  void SetFallback(std::shared_ptr<const FallbackModel> model, std::string source);
  bool has_fallback() const;

  // What the fallback reads of a log: its features, and whether the log
  // shows an error at all (train_fallback and tests).
  std::vector<std::string> FallbackFeaturesOf(const std::vector<std::string>& lines,
                                              bool* sees_error) const;

 private:
  struct Compiled;
  explicit LogClassifier(std::unique_ptr<Compiled> compiled);

  std::unique_ptr<Compiled> compiled_;
};

inline constexpr double kFallbackConfidenceScale = 0.3;

// The classifier over the rules file at `rules_path`, or, when the path is
// empty, over the rules built into the binary (EmbeddedDiagnosisRulesText,
// named kEmbeddedDiagnosisRulesName in messages); refusing a rule whose
// action is not in `supported`; without the learned fallback. Errors name
// the file or "built-in rules". The one place a program turns "a rules file
// if one was given or found, else the built-in rules" into a classifier.
absl::StatusOr<LogClassifier> LoadClassifier(const std::string& rules_path,
                                             const DiagnosisActionSet& supported);
// LoadClassifier over the built-in rules.
absl::StatusOr<LogClassifier> BuiltInClassifier(const DiagnosisActionSet& supported);

// Splits a log into lines: '\n' separated, a trailing '\r' dropped, and only
// the last `max_lines` kept when max_lines > 0 (a tail).
std::vector<std::string> SplitLogLines(absl::string_view text, int max_lines = 0);

}  // namespace dcu::modelkit
