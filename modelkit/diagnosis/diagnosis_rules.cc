#include "modelkit/diagnosis/diagnosis_rules.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_util.h"
#include "modelkit/diagnosis/context_condition.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "re2/re2.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::DiagnosisAction;
using dcufleet::v1::DiagnosisRules;
using dcufleet::v1::Remediation;
using dcufleet::v1::RemediationKind;
using dcufleet::v1::Rule;

// Collects the first text-format error with its position; the parser keeps
// going after an error and later ones are usually consequences.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      // The parser counts from 0.
      line_ = line + 1;
      column_ = column + 1;
      message_ = message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}

  bool has_error() const { return has_error_; }
  std::string Describe(absl::string_view source) const {
    return absl::StrCat(source, ":", line_, ":", column_, ": ", message_);
  }

 private:
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

bool IsSnakeCaseId(absl::string_view s) {
  if (s.empty() || !absl::ascii_islower(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!(absl::ascii_islower(static_cast<unsigned char>(c)) ||
          absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return true;
}

absl::Status CheckPatterns(const Rule& rule, absl::string_view field,
                           const google::protobuf::RepeatedPtrField<std::string>& patterns,
                           absl::string_view source) {
  for (int i = 0; i < patterns.size(); ++i) {
    if (patterns[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": rule '", rule.id(), "': ", field,
                                                     "[", i, "] is empty"));
    }
    RE2 re(patterns[i], RE2::Quiet);
    if (!re.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": rule '", rule.id(), "': ", field,
                                                     "[", i, "] '", patterns[i],
                                                     "' is not a valid RE2 pattern: ", re.error()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRemediation(const Rule& rule, int index, const Remediation& r,
                              absl::string_view source, const DiagnosisActionSet& supported) {
  std::string where = absl::StrCat(source, ": rule '", rule.id(), "': remediation[", index, "]");
  if (r.kind() == dcufleet::v1::REMEDIATION_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": kind is not set"));
  }
  std::optional<DiagnosisAction> action = DiagnosisActionFromName(r.action());
  auto names = [](const DiagnosisActionSet& set) {
    std::vector<std::string> out;
    for (DiagnosisAction a : set) out.push_back(DiagnosisActionName(a));
    return absl::StrJoin(out, ", ");
  };
  if (!action) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": unknown action '", r.action(),
                                                   "' (known: ", names(AllDiagnosisActions()),
                                                   ")"));
  }
  if (!supported.count(*action)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": action '", r.action(), "' of rule '", rule.id(),
        "' has no handler in this program (handled: ", names(supported), ")"));
  }
  if (*action == dcufleet::v1::DIAGNOSIS_ACTION_FAILOVER &&
      r.kind() != dcufleet::v1::REMEDIATION_KIND_FAILOVER) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": action 'failover' needs kind REMEDIATION_KIND_FAILOVER"));
  }
  if (*action == dcufleet::v1::DIAGNOSIS_ACTION_HUMAN &&
      r.kind() != dcufleet::v1::REMEDIATION_KIND_HUMAN) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": action 'human' needs kind REMEDIATION_KIND_HUMAN"));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& StandardFailureClasses() {
  static const auto* const kClasses = new std::vector<std::string>{
      "startup_free_memory_below_utilization",
      "no_cache_blocks",
      "max_model_len_exceeds_kv_capacity",
      "cuda_oom_model_load",
      "unsupported_head_size",
      "tp_not_divisible_heads",
      "unsupported_model_architecture",
      "config_or_tokenizer_error",
      "model_path_not_found",
      "port_in_use",
      "nccl_rccl_init_failure",
      "shared_lib_undefined_symbol",
      "missing_custom_op",
      "wrong_platform_build",
      "hip_invalid_device_function",
      "hip_runtime_error",
      "triton_unsupported_gpu_target",
      "triton_kernel_compile_failure",
      "unsupported_gpu_arch_runtime",
      "rocm_library_missing_arch",
  };
  return *kClasses;
}

const DiagnosisActionSet& AllDiagnosisActions() {
  static const auto* const kAll = [] {
    auto* all = new DiagnosisActionSet;
    const auto* d = dcufleet::v1::DiagnosisAction_descriptor();
    for (int i = 0; i < d->value_count(); ++i) {
      auto a = static_cast<DiagnosisAction>(d->value(i)->number());
      if (a != dcufleet::v1::DIAGNOSIS_ACTION_UNSPECIFIED) all->insert(a);
    }
    return all;
  }();
  return *kAll;
}

std::string DiagnosisActionName(DiagnosisAction action) {
  if (action == dcufleet::v1::DIAGNOSIS_ACTION_UNSPECIFIED) return "";
  static constexpr absl::string_view kPrefix = "DIAGNOSIS_ACTION_";
  std::string name = dcufleet::v1::DiagnosisAction_Name(action);
  if (!absl::StartsWith(name, kPrefix)) return name;
  return absl::AsciiStrToLower(name.substr(kPrefix.size()));
}

std::optional<DiagnosisAction> DiagnosisActionFromName(absl::string_view name) {
  if (name.empty() || absl::AsciiStrToLower(name) != name) return std::nullopt;
  DiagnosisAction a;
  if (!dcufleet::v1::DiagnosisAction_Parse(
          absl::StrCat("DIAGNOSIS_ACTION_", absl::AsciiStrToUpper(name)), &a) ||
      a == dcufleet::v1::DIAGNOSIS_ACTION_UNSPECIFIED) {
    return std::nullopt;
  }
  return a;
}

std::string RemediationKindName(RemediationKind kind) {
  switch (kind) {
    case dcufleet::v1::REMEDIATION_KIND_AUTO:
      return "auto";
    case dcufleet::v1::REMEDIATION_KIND_FAILOVER:
      return "failover";
    case dcufleet::v1::REMEDIATION_KIND_HUMAN:
      return "human";
    default:
      return "unspecified";
  }
}

absl::Status ValidateDiagnosisRules(const DiagnosisRules& rules, absl::string_view source,
                                    const DiagnosisActionSet& supported) {
  if (rules.rule_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no rules"));
  }
  std::set<std::string> ids;
  for (int i = 0; i < rules.rule_size(); ++i) {
    const Rule& rule = rules.rule(i);
    if (rule.id().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": rule[", i, "] has no id"));
    }
    if (!ids.insert(rule.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": rule id '", rule.id(), "' is used twice"));
    }
    std::string where = absl::StrCat(source, ": rule '", rule.id(), "'");
    if (!IsSnakeCaseId(rule.failure_class())) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": failure_class '", rule.failure_class(), "' is not a lower_snake_case id"));
    }
    if (!(rule.confidence() > 0.0 && rule.confidence() <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": confidence ", rule.confidence(), " is not in (0, 1]"));
    }
    bool unknown = rule.failure_class() == "unknown";
    bool has_patterns = rule.any_size() > 0 || rule.all_size() > 0;
    if (unknown && (has_patterns || rule.not_on_line_size() > 0 || rule.not_in_log_size() > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the class 'unknown' is the fallback and takes no patterns"));
    }
    if (!unknown && !has_patterns) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": needs at least one pattern in 'any' or 'all'"));
    }
    DCU_RETURN_IF_ERROR(CheckPatterns(rule, "any", rule.any(), source));
    DCU_RETURN_IF_ERROR(CheckPatterns(rule, "all", rule.all(), source));
    DCU_RETURN_IF_ERROR(CheckPatterns(rule, "not_on_line", rule.not_on_line(), source));
    DCU_RETURN_IF_ERROR(CheckPatterns(rule, "not_in_log", rule.not_in_log(), source));
    DCU_RETURN_IF_ERROR(CheckCondition(rule.when(), where));
    if (rule.scope() != dcufleet::v1::MATCH_SCOPE_ANY_LINE && rule.any_size() == 0) {
      // The scope applies to `any`; without it the rule would silently be
      // matched on every line.
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": scope ", dcufleet::v1::MatchScope_Name(rule.scope()),
          " needs patterns in 'any'"));
    }
    for (int h = 0; h < rule.hidden_cause_size(); ++h) {
      const auto& hidden = rule.hidden_cause(h);
      std::string at = absl::StrCat(where, ": hidden_cause[", h, "]");
      if (!IsSnakeCaseId(hidden.failure_class()) || hidden.failure_class() == "unknown" ||
          hidden.failure_class() == rule.failure_class()) {
        return absl::InvalidArgumentError(absl::StrCat(
            at, ": failure_class '", hidden.failure_class(),
            "' must be another class id than the rule's own and 'unknown'"));
      }
      if (!(hidden.confidence() > 0.0 && hidden.confidence() <= 1.0)) {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ": confidence ", hidden.confidence(), " is not in (0, 1]"));
      }
      DCU_RETURN_IF_ERROR(CheckPatterns(rule, "hidden_cause.when_log_has", hidden.when_log_has(),
                                        source));
      DCU_RETURN_IF_ERROR(CheckCondition(hidden.when(), at));
    }
    if (rule.remediation_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": needs at least one remediation"));
    }
    for (int r = 0; r < rule.remediation_size(); ++r) {
      DCU_RETURN_IF_ERROR(CheckRemediation(rule, r, rule.remediation(r), source, supported));
    }
  }
  for (int i = 0; i < rules.follow_on_error_size(); ++i) {
    const std::string& p = rules.follow_on_error(i);
    RE2 re(p, RE2::Quiet);
    if (p.empty() || !re.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": follow_on_error[", i, "] '", p,
                                                     "' is not a valid RE2 pattern",
                                                     p.empty() ? "" : ": ", re.error()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DiagnosisRules> ParseDiagnosisRules(absl::string_view text,
                                                   absl::string_view source_name,
                                                   const DiagnosisActionSet& supported) {
  DiagnosisRules rules;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, &rules)) {
    if (errors.has_error()) return absl::InvalidArgumentError(errors.Describe(source_name));
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": not a DiagnosisRules text proto"));
  }
  DCU_RETURN_IF_ERROR(ValidateDiagnosisRules(rules, source_name, supported));
  return rules;
}

absl::StatusOr<DiagnosisRules> LoadDiagnosisRulesFile(const std::string& path,
                                                      const DiagnosisActionSet& supported) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("diagnosis rules '", path, "' cannot be opened"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("diagnosis rules '", path, "': read failed"));
  }
  return ParseDiagnosisRules(buffer.str(), path, supported);
}

}  // namespace dcu::modelkit
