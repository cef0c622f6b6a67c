#include "dcuctl/diagnose_commands.h"

#include "dcuctl/exit_codes.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/embedded_rules.h"
#include "modelkit/diagnosis/fallback_model.h"
#include "modelkit/diagnosis/log_classifier.h"

namespace dcu::dcuctl {
namespace {

using dcufleet::v1::DiagnosisFinding;
using dcufleet::v1::DiagnosisResult;
using dcufleet::v1::Remediation;

constexpr absl::string_view kSystemRulesPath = "/etc/dcufleet/diagnosis/rules.txtpb";

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::map<std::string, std::string> SortedParams(const Remediation& r) {
  return {r.params().begin(), r.params().end()};
}

nlohmann::json RemediationToJson(const Remediation& r) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, value] : SortedParams(r)) params[key] = value;
  return {{"kind", modelkit::RemediationKindName(r.kind())},
          {"action", r.action()},
          {"params", params},
          {"summary", r.summary()}};
}

// "failover mark_broken=stack_arch arch=gfx928"
std::string ActionLine(const Remediation& r) {
  std::string line = r.action();
  for (const auto& [key, value] : SortedParams(r)) {
    absl::StrAppend(&line, " ", key, "=", value);
  }
  return line;
}

std::string FindingBasisName(dcufleet::v1::FindingBasis basis) {
  switch (basis) {
    case dcufleet::v1::FINDING_BASIS_TERMINAL_ERROR:
      return "terminal_error";
    case dcufleet::v1::FINDING_BASIS_RAISED_ERROR:
      return "raised_error";
    case dcufleet::v1::FINDING_BASIS_LOG_LINE:
      return "log_line";
    case dcufleet::v1::FINDING_BASIS_TRACEBACK_FRAMES:
      return "traceback_frames";
    case dcufleet::v1::FINDING_BASIS_EXPECTED_NEXT:
      return "expected_next";
    case dcufleet::v1::FINDING_BASIS_LEARNED_FALLBACK:
      return "learned_fallback";
    default:
      return "";
  }
}

}  // namespace

nlohmann::json DiagnosisResultToJson(const DiagnosisResult& result) {
  nlohmann::json findings = nlohmann::json::array();
  for (const DiagnosisFinding& f : result.findings()) {
    nlohmann::json evidence = nlohmann::json::array();
    nlohmann::json evidence_lines = nlohmann::json::array();
    for (const auto& e : f.evidence()) {
      evidence.push_back(e.text());
      evidence_lines.push_back({{"line", e.line()}, {"text", e.text()}});
    }
    nlohmann::json alternatives = nlohmann::json::array();
    for (const Remediation& r : f.alternatives()) alternatives.push_back(RemediationToJson(r));
    nlohmann::json captures = nlohmann::json::object();
    std::map<std::string, std::string> sorted(f.captures().begin(), f.captures().end());
    for (const auto& [key, value] : sorted) captures[key] = value;
    findings.push_back({{"class", f.failure_class()},
                        {"confidence", f.confidence()},
                        {"evidence", evidence},
                        {"remediation", RemediationToJson(f.remediation())},
                        {"rule", f.rule_id()},
                        {"evidence_lines", evidence_lines},
                        {"alternatives", alternatives},
                        {"missing_facts", std::vector<std::string>(f.missing_facts().begin(),
                                                                   f.missing_facts().end())},
                        {"captures", captures},
                        {"basis", FindingBasisName(f.basis())},
                        {"explanation", f.explanation()},
                        {"conditions", std::vector<std::string>(f.conditions().begin(),
                                                                f.conditions().end())}});
  }
  nlohmann::json out = {{"findings", findings},
                        {"lines_examined", result.lines_examined()},
                        {"rules_source", result.rules_source()}};
  if (result.has_terminal_error()) {
    const dcufleet::v1::TerminalError& t = result.terminal_error();
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& fr : t.frames()) {
      frames.push_back({{"line", fr.line()}, {"file", fr.file()}, {"function", fr.function()}});
    }
    out["terminal_error"] = {{"type", t.type()},
                             {"message", t.message()},
                             {"line", t.line()},
                             {"error_line_missing", t.error_line_missing()},
                             {"frames", frames}};
  }
  if (result.has_context()) {
    const dcufleet::v1::LogContext& c = result.context();
    nlohmann::json context = nlohmann::json::object();
    auto field = [&](const char* name, const std::string& value, int line) {
      if (!value.empty()) context[name] = {{"value", value}, {"line", line}};
    };
    field("engine", c.engine(), c.engine_line());
    field("engine_version", c.engine_version(), c.engine_line());
    field("platform", c.platform(), c.platform_line());
    field("arch", c.arch(), c.arch_line());
    out["context"] = context;
  }
  return out;
}

void RenderDiagnosisTable(const DiagnosisResult& result, std::ostream& out) {
  size_t class_width = 5;
  for (const DiagnosisFinding& f : result.findings()) {
    class_width = std::max(class_width, f.failure_class().size());
  }
  out << absl::StrFormat("%-4s  %-*s  %-4s  %-8s  %s\n", "RANK", static_cast<int>(class_width),
                         "CLASS", "CONF", "KIND", "ACTION");
  int rank = 0;
  for (const DiagnosisFinding& f : result.findings()) {
    ++rank;
    out << absl::StrFormat("%-4d  %-*s  %.2f  %-8s  %s\n", rank, static_cast<int>(class_width),
                           f.failure_class(), f.confidence(),
                           modelkit::RemediationKindName(f.remediation().kind()),
                           ActionLine(f.remediation()));
    for (const auto& e : f.evidence()) {
      std::string text = e.text();
      if (text.size() > 160) text = text.substr(0, 157) + "...";
      out << "      evidence L" << e.line() << ": " << text << "\n";
    }
    if (!f.remediation().summary().empty()) {
      out << "      what to do: " << f.remediation().summary() << "\n";
    }
    if (!f.explanation().empty()) out << "      note: " << f.explanation() << "\n";
    if (f.conditions_size() > 0) {
      out << "      rests on: " << absl::StrJoin(f.conditions(), ", ") << "\n";
    }
    if (f.missing_facts_size() > 0) {
      out << "      needs facts: " << absl::StrJoin(f.missing_facts(), ", ") << "\n";
    }
  }
  if (result.has_terminal_error()) {
    // What the run died of, as the structure reader sees it.
    const dcufleet::v1::TerminalError& t = result.terminal_error();
    std::string message = t.message().substr(0, t.message().find('\n'));
    if (message.size() > 140) message = message.substr(0, 137) + "...";
    std::string error = absl::StrCat("L", t.line(), ": ", t.type(), message.empty() ? "" : ": ",
                                     message);
    std::string innermost;
    if (t.frames_size() > 0) {
      const auto& frame = t.frames(t.frames_size() - 1);
      innermost = absl::StrCat(" (innermost frame: ", frame.function(), " in ", frame.file(), ")");
    }
    if (t.error_line_missing()) {
      out << "died in: (the error line is missing)" << innermost << "\n";
      if (t.line() > 0) out << "last error before it " << error << "\n";
    } else {
      out << "died of " << error << innermost << "\n";
    }
  }
  if (result.has_context()) {
    // Where the log says it ran: "ran on: vllm 0.9.2 (L3), rocm (L5), gfx928 (L40)".
    const dcufleet::v1::LogContext& c = result.context();
    std::vector<std::string> said;
    auto add = [&](const std::string& value, int line) {
      if (!value.empty()) said.push_back(absl::StrCat(value, " (L", line, ")"));
    };
    add(absl::StrCat(c.engine(), c.engine_version().empty() ? "" : " ", c.engine_version()),
        c.engine_line());
    add(c.platform(), c.platform_line());
    add(c.arch(), c.arch_line());
    out << "ran on: " << absl::StrJoin(said, ", ") << "\n";
  }
  out << "(" << result.lines_examined() << " lines examined";
  if (!result.rules_source().empty()) out << ", rules " << result.rules_source();
  out << ")\n";
}

int RenderDiagnosis(const DiagnosisResult& result, absl::string_view format, std::ostream& out,
                    std::ostream& err) {
  if (format == "json") {
    out << DiagnosisResultToJson(result).dump(2) << "\n";
    return 0;
  }
  if (format == "table" || format.empty()) {
    RenderDiagnosisTable(result, out);
    return 0;
  }
  err << "error: unknown output format '" << format << "' (use table or json)\n";
  return 2;
}

std::string ResolveDiagnosisRulesPath(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("DCU_DIAGNOSIS_RULES"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string local(modelkit::kDefaultDiagnosisRulesPath);
  if (IsRegularFile(local)) return local;
  std::string system(kSystemRulesPath);
  if (IsRegularFile(system)) return system;
  return "";
}

std::string ResolveFallbackModelPath(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("DCU_DIAGNOSIS_FALLBACK_MODEL");
      env != nullptr && *env != '\0') {
    return env;
  }
  std::string local(modelkit::kDefaultFallbackModelPath);
  if (IsRegularFile(local)) return local;
  std::string system = "/etc/dcufleet/diagnosis/fallback_model.tsv";
  if (IsRegularFile(system)) return system;
  return "";
}

int RunDiagnoseLog(const DiagnoseLogArgs& args, std::ostream& out, std::ostream& err) {
  if (args.log_path.empty()) {
    err << "error: --log FILE is required\n";
    return 2;
  }
  if (args.output != "table" && args.output != "json") {
    err << "error: unknown output format '" << args.output << "' (use table or json)\n";
    return 2;
  }
  if (args.tail_lines < 0) {
    err << "error: --tail must be >= 0, got " << args.tail_lines << "\n";
    return 2;
  }
  modelkit::ClassifyOptions options;
  for (const std::string& fact : args.facts) {
    size_t eq = fact.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "error: --fact '" << fact << "' is not KEY=VALUE\n";
      return 2;
    }
    options.facts[fact.substr(0, eq)] = fact.substr(eq + 1);
  }

  // --rules, $DCU_DIAGNOSIS_RULES, the source tree's or /etc's file; else the
  // rules built into this binary (an installed dcuctl run from anywhere).
  auto classifier = modelkit::LoadClassifier(ResolveDiagnosisRulesPath(args.rules_path),
                                             modelkit::AllDiagnosisActions());
  if (!classifier.ok()) {
    err << "error: " << classifier.status().message() << "\n";
    return 2;
  }
  // The learned fallback: --fallback-model, $DCU_DIAGNOSIS_FALLBACK_MODEL,
  // the source tree's or /etc's file; else the model built into this binary.
  std::string model_path = ResolveFallbackModelPath(args.fallback_model_path);
  if (model_path != "none") {
    std::string model_text;
    if (model_path.empty()) {
      model_text = std::string(modelkit::EmbeddedFallbackModelText());
      model_path = std::string(modelkit::kEmbeddedFallbackModelName);
    } else {
      if (!IsRegularFile(model_path)) {
        err << "error: fallback model '" << model_path << "' is not a readable file\n";
        return 2;
      }
      std::ifstream in(model_path, std::ios::binary);
      std::stringstream buffer;
      buffer << in.rdbuf();
      model_text = buffer.str();
    }
    auto model = modelkit::FallbackModel::Parse(model_text, model_path);
    if (!model.ok()) {
      err << "error: " << model.status().message() << "\n";
      return 2;
    }
    classifier->SetFallback(std::make_shared<const modelkit::FallbackModel>(std::move(*model)),
                            model_path);
  }

  if (!IsRegularFile(args.log_path)) {
    err << "error: log '" << args.log_path << "' is not a readable file\n";
    return 2;
  }
  std::ifstream in(args.log_path, std::ios::binary);
  if (!in) {
    err << "error: log '" << args.log_path << "' cannot be opened\n";
    return 2;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    err << "error: log '" << args.log_path << "': read failed\n";
    return 2;
  }

  DiagnosisResult result =
      classifier->Classify(modelkit::SplitLogLines(buffer.str(), args.tail_lines), options);
  int rc = RenderDiagnosis(result, args.output, out, err);
  if (rc != 0) return rc;
  // As model audit: 0 nothing found, kExitFindings a failure recognised.
  bool identified = result.findings_size() > 0 && result.findings(0).failure_class() != "unknown";
  return identified ? kExitFindings : kExitOk;
}

}  // namespace dcu::dcuctl
