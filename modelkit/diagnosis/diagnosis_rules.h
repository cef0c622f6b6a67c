#pragma once

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

// The remediation actions the deploy reconciler knows how to apply (see
// diagnosis.proto, Remediation). Rules using any other action are rejected.
const std::vector<std::string>& RemediationActions();

// "auto", "failover", "human" ("unspecified" for the zero value).
std::string RemediationKindName(dcufleet::v1::RemediationKind kind);

// Parses protobuf text format. Syntax errors come back as INVALID_ARGUMENT
// "<source_name>:<line>:<col>: <reason>" (1-based line and column); semantic
// errors (see ValidateDiagnosisRules) name the rule id and the field.
absl::StatusOr<dcufleet::v1::DiagnosisRules> ParseDiagnosisRules(absl::string_view text,
                                                                  absl::string_view source_name);

// Reads and parses `path`. NOT_FOUND / PERMISSION_DENIED when the file
// cannot be read, INVALID_ARGUMENT as ParseDiagnosisRules.
absl::StatusOr<dcufleet::v1::DiagnosisRules> LoadDiagnosisRulesFile(const std::string& path);

// Checks what the text format cannot: ids present and unique; failure_class
// a lower_snake_case id; confidence in (0, 1]; at least one pattern in
// `any`/`all` (none for the class "unknown"); every pattern compiles with
// RE2 (the error names the rule id, the field and index); at least one
// remediation, each with a kind and a known action.
absl::Status ValidateDiagnosisRules(const dcufleet::v1::DiagnosisRules& rules,
                                    absl::string_view source_name);

}  // namespace dcu::modelkit
