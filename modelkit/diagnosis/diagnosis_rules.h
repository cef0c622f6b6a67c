#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/diagnosis.pb.h"

namespace dcu::modelkit {

// Path of the shipped rules, relative to the repository / install root.
inline constexpr absl::string_view kDefaultDiagnosisRulesPath = "deploy/diagnosis/rules.txtpb";

// The failure class ids issue 6 defines (without "unknown"). Rules may add
// classes of their own; these are the ones the shipped file must cover.
const std::vector<std::string>& StandardFailureClasses();

// A set of remediation actions: what a program that loads rules can execute.
using DiagnosisActionSet = std::set<dcufleet::v1::DiagnosisAction>;

// Every action DiagnosisAction declares. For programs that only classify and
// show findings (dcuctl's offline diagnose, benchmarks); the controller
// passes the set its RemediationPolicy executes.
const DiagnosisActionSet& AllDiagnosisActions();

// The name rules use: "set_env" for DIAGNOSIS_ACTION_SET_ENV ("" for the
// zero value).
std::string DiagnosisActionName(dcufleet::v1::DiagnosisAction action);
// The action a rule's name stands for; nullopt when the vocabulary has none.
std::optional<dcufleet::v1::DiagnosisAction> DiagnosisActionFromName(absl::string_view name);

// "auto", "failover", "human" ("unspecified" for the zero value).
std::string RemediationKindName(dcufleet::v1::RemediationKind kind);

// Parses protobuf text format. Syntax errors come back as INVALID_ARGUMENT
// "<source_name>:<line>:<col>: <reason>" (1-based line and column); semantic
// errors (see ValidateDiagnosisRules) name the rule id and the field.
// `supported`: the actions the loading program executes; a rule naming any
// other action is refused (INVALID_ARGUMENT naming the rule id and action),
// so that no rule is loaded that nothing would carry out.
absl::StatusOr<dcufleet::v1::DiagnosisRules> ParseDiagnosisRules(
    absl::string_view text, absl::string_view source_name, const DiagnosisActionSet& supported);

// Reads and parses `path`. NOT_FOUND / PERMISSION_DENIED when the file
// cannot be read, INVALID_ARGUMENT as ParseDiagnosisRules.
absl::StatusOr<dcufleet::v1::DiagnosisRules> LoadDiagnosisRulesFile(
    const std::string& path, const DiagnosisActionSet& supported);

// Checks what the text format cannot: ids present and unique; failure_class
// a lower_snake_case id; confidence in (0, 1]; at least one pattern in
// `any`/`all` (none for the class "unknown"); every pattern compiles with
// RE2 (the error names the rule id, the field and index); a scope other
// than ANY_LINE only on a rule with `any` patterns; every follow_on_error
// pattern compiles; at least one remediation, each with a kind and an action
// of the vocabulary that is in `supported`.
absl::Status ValidateDiagnosisRules(const dcufleet::v1::DiagnosisRules& rules,
                                    absl::string_view source_name,
                                    const DiagnosisActionSet& supported);

}  // namespace dcu::modelkit
