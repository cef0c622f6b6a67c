#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/diagnosis.pb.h"
#include "nlohmann/json.hpp"

namespace dcu::dcuctl {

// `dcuctl diagnose --log FILE [-o table|json] [--rules FILE] [--tail N]
//                  [--fact KEY=VALUE]...`
// Works offline: reads the log, classifies it with the rules and prints the
// findings, most likely cause first.
//
// Flags the lead wires with CLI11 in dcuctl/main.cc:
//   --log FILE        required; the log of a failed launch ("-" = stdin is
//                     not supported: pass a file).
//   -o, --output      "table" (default) or "json".
//   --rules FILE      rules in protobuf text format; default: $DCU_DIAGNOSIS_RULES,
//                     else deploy/diagnosis/rules.txtpb under the current
//                     directory, else /etc/dcufleet/diagnosis/rules.txtpb.
//   --fallback-model FILE  the learned fallback's model (fallback_model.tsv),
//                     consulted when no rule matches; "none" switches it
//                     off. Default: $DCU_DIAGNOSIS_FALLBACK_MODEL, else
//                     deploy/diagnosis/fallback_model.tsv under the current
//                     directory, else /etc/dcufleet/diagnosis/fallback_model.tsv,
//                     else the model built into the binary.
//   --tail N          only classify the last N lines (default 0 = all).
//   --fact KEY=VALUE  a fact for remediation choice and ${...} placeholders,
//                     e.g. --fact memory_plan.kv_cache_bytes=25769803776
//                     (repeatable). Offline facts are incomplete: absent
//                     facts are reported as missing, not assumed false.
// Exit codes: 8 (kExitFindings) a failure was recognised; 0 nothing matched
// (class "unknown": the log shows no failure the rules know);
// 2 usage or input error (unreadable log, bad rules file, bad flag value).
struct DiagnoseLogArgs {
  std::string log_path;
  std::string output = "table";
  std::string rules_path;
  std::string fallback_model_path;
  int tail_lines = 0;
  std::vector<std::string> facts;
};

int RunDiagnoseLog(const DiagnoseLogArgs& args, std::ostream& out, std::ostream& err);

// Renders a result the way `dcuctl diagnose` prints it, so that
// `dcuctl diagnose deployment NAME` (which gets DiagnosisResults of the
// deployment's failed attempts from the controller) prints the same:
//   "json":  {"findings":[{"class","confidence","evidence":[...],
//             "remediation":{"kind","action","params","summary"}, "rule",
//             "evidence_lines":[{"line","text"}], "alternatives", "missing_facts",
//             "captures"}], "lines_examined", "rules_source"}
//   "table": a ranked table with the evidence and what to do under each row.
// Returns 0, or 2 (with a message on `err`) for an unknown format.
int RenderDiagnosis(const dcufleet::v1::DiagnosisResult& result, absl::string_view format,
                    std::ostream& out, std::ostream& err);
nlohmann::json DiagnosisResultToJson(const dcufleet::v1::DiagnosisResult& result);
void RenderDiagnosisTable(const dcufleet::v1::DiagnosisResult& result, std::ostream& out);

// The rules file `dcuctl diagnose` uses for a --rules value (see above).
// Returns "" when none exists.
std::string ResolveDiagnosisRulesPath(const std::string& flag_value);
// The same for --fallback-model ("none" is returned as is).
std::string ResolveFallbackModelPath(const std::string& flag_value);

}  // namespace dcu::dcuctl
