#include "modelkit/diagnosis/diagnosis_rules.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::modelkit {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

std::string SourceDir() {
  const char* dir = std::getenv("DCU_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string ShippedRulesPath() {
  return SourceDir() + "/" + std::string(kDefaultDiagnosisRulesPath);
}

// A minimal valid rule; tests break one thing at a time.
constexpr char kGoodRule[] = R"pb(
rule {
  id: "port.in_use"
  failure_class: "port_in_use"
  any: "[Aa]ddress already in use"
  confidence: 0.9
  remediation { kind: REMEDIATION_KIND_AUTO action: "change_port" }
}
)pb";

TEST(DiagnosisRulesTest, ShippedRulesLoadAndCoverEveryClassOfIssue6) {
  auto rules = LoadDiagnosisRulesFile(ShippedRulesPath(), AllDiagnosisActions());
  ASSERT_TRUE(rules.ok()) << rules.status();
  std::set<std::string> classes;
  for (const auto& rule : rules->rule()) classes.insert(rule.failure_class());
  std::set<std::string> expected(StandardFailureClasses().begin(),
                                 StandardFailureClasses().end());
  expected.insert("unknown");
  EXPECT_EQ(classes, expected);
  EXPECT_EQ(StandardFailureClasses().size(), 20u);
}

TEST(DiagnosisRulesTest, ShippedRemediationsMatchTheIssue) {
  auto rules = LoadDiagnosisRulesFile(ShippedRulesPath(), AllDiagnosisActions());
  ASSERT_TRUE(rules.ok()) << rules.status();
  std::map<std::string, std::set<std::string>> actions;  // class -> actions of all options
  std::map<std::string, std::set<std::string>> kinds;
  for (const auto& rule : rules->rule()) {
    for (const auto& r : rule.remediation()) {
      actions[rule.failure_class()].insert(r.action());
      kinds[rule.failure_class()].insert(RemediationKindName(r.kind()));
    }
  }
  EXPECT_TRUE(actions["startup_free_memory_below_utilization"].count("reap_or_move_devices"));
  EXPECT_TRUE(actions["no_cache_blocks"].count("add_arg"));
  EXPECT_TRUE(actions["unsupported_head_size"].count("audit_config"));
  EXPECT_TRUE(actions["unsupported_head_size"].count("failover"));
  EXPECT_TRUE(actions["triton_unsupported_gpu_target"].count("failover"));
  EXPECT_TRUE(actions["hip_invalid_device_function"].count("failover"));
  EXPECT_TRUE(actions["shared_lib_undefined_symbol"].count("prepend_ld_library_path"));
  EXPECT_TRUE(actions["missing_custom_op"].count("set_env"));
  EXPECT_TRUE(actions["port_in_use"].count("change_port"));
  EXPECT_TRUE(actions["tp_not_divisible_heads"].count("change_tp"));
  EXPECT_TRUE(actions["model_path_not_found"].count("move_to_node_with_model"));
  EXPECT_TRUE(actions["unknown"].count("human"));
  EXPECT_EQ(kinds["triton_unsupported_gpu_target"], std::set<std::string>{"failover"});
}

TEST(DiagnosisRulesTest, SyntaxErrorNamesFileLineAndColumn) {
  std::string text = "rule {\n  id: \"x\"\n  confidense: 0.5\n}\n";
  auto rules = ParseDiagnosisRules(text, "my_rules.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().code(), absl::StatusCode::kInvalidArgument);
  // Line 3; the column is where the parser noticed (after the field name).
  EXPECT_THAT(std::string(rules.status().message()),
              MatchesRegex("my_rules\\.txtpb:3:[0-9]+: .*no field named \"confidense\".*"));
}

TEST(DiagnosisRulesTest, FileWithSyntaxErrorReportsItsPath) {
  std::string path = ::testing::TempDir() + "/diagnosis_rules_bad.txtpb";
  {
    std::ofstream out(path);
    out << kGoodRule << "rule {\n  id: \"second\"\n  failure_class: 7 7\n}\n";
  }
  auto rules = LoadDiagnosisRulesFile(path, AllDiagnosisActions());
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(std::string(rules.status().message()), StartsWith(path + ":11:"));
  std::remove(path.c_str());
}

// A rule is loadable only when the loading program executes its action: a
// controller whose policy does not handle `retry` refuses a rule using it,
// naming the rule and the action.
TEST(DiagnosisRulesTest, ActionWithoutAHandlerIsRefusedNamingRuleAndAction) {
  std::string text = std::string(kGoodRule) + R"pb(
rule {
  id: "nccl.flaky"
  failure_class: "nccl_rccl_init_failure"
  any: "NCCL error"
  confidence: 0.5
  remediation { kind: REMEDIATION_KIND_AUTO action: "retry" }
})pb";
  DiagnosisActionSet without_retry = AllDiagnosisActions();
  without_retry.erase(dcufleet::v1::DIAGNOSIS_ACTION_RETRY);
  auto refused = ParseDiagnosisRules(text, "r.txtpb", without_retry);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("rule 'nccl.flaky'"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("action 'retry'"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("no handler"));
  // The same text loads where the action is executed.
  EXPECT_TRUE(ParseDiagnosisRules(text, "r.txtpb", AllDiagnosisActions()).ok());
  // Names outside the vocabulary are refused whatever the set.
  std::string unknown = absl::StrReplaceAll(text, {{"\"retry\"", "\"reboot\""}});
  auto bad = ParseDiagnosisRules(unknown, "r.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("unknown action 'reboot'"));
}

TEST(DiagnosisRulesTest, ActionNamesRoundTripThroughTheEnum) {
  for (auto a : AllDiagnosisActions()) {
    std::string name = DiagnosisActionName(a);
    EXPECT_THAT(name, MatchesRegex("[a-z_]+"));
    EXPECT_EQ(DiagnosisActionFromName(name), a) << name;
  }
  EXPECT_EQ(DiagnosisActionName(dcufleet::v1::DIAGNOSIS_ACTION_PREPEND_LD_LIBRARY_PATH),
            "prepend_ld_library_path");
  EXPECT_FALSE(DiagnosisActionFromName("SET_ENV").has_value());
  EXPECT_FALSE(DiagnosisActionFromName("unspecified").has_value());
  EXPECT_EQ(AllDiagnosisActions().size(), 13u);
}

TEST(DiagnosisRulesTest, MissingFileIsNotFound) {
  auto rules = LoadDiagnosisRulesFile(::testing::TempDir() + "/does/not/exist.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(rules.status().message()), HasSubstr("does/not/exist.txtpb"));
}

TEST(DiagnosisRulesTest, InvalidRegexIsRejectedWithRuleIdAndField) {
  std::string text = std::string(kGoodRule) + R"pb(
rule {
  id: "bad.regex"
  failure_class: "port_in_use"
  any: "fine"
  not_on_line: "(unclosed"
  confidence: 0.5
  remediation { kind: REMEDIATION_KIND_AUTO action: "change_port" }
})pb";
  auto rules = ParseDiagnosisRules(text, "r.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(std::string(rules.status().message()), HasSubstr("rule 'bad.regex'"));
  EXPECT_THAT(std::string(rules.status().message()), HasSubstr("not_on_line[0]"));
  EXPECT_THAT(std::string(rules.status().message()), HasSubstr("(unclosed"));
}

TEST(DiagnosisRulesTest, PerlLookaheadIsNotRe2) {
  std::string text = R"pb(
rule {
  id: "lookahead"
  failure_class: "hip_runtime_error"
  any: "HIP error: (?!invalid device function)"
  confidence: 0.5
  remediation { kind: REMEDIATION_KIND_AUTO action: "retry" }
})pb";
  auto rules = ParseDiagnosisRules(text, "r.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(std::string(rules.status().message()), HasSubstr("rule 'lookahead': any[0]"));
}

struct BadRule {
  const char* name;
  const char* text;
  const char* message;
};

class SemanticErrorTest : public ::testing::TestWithParam<BadRule> {};

TEST_P(SemanticErrorTest, IsRejected) {
  auto rules = ParseDiagnosisRules(GetParam().text, "r.txtpb", AllDiagnosisActions());
  ASSERT_FALSE(rules.ok()) << GetParam().name;
  EXPECT_EQ(rules.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(rules.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SemanticErrorTest,
    ::testing::Values(
        BadRule{"empty", "", "no rules"},
        BadRule{"no id",
                R"pb(rule { failure_class: "port_in_use" any: "x" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "rule[0] has no id"},
        BadRule{"duplicate id",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } }
                     rule { id: "a" failure_class: "port_in_use" any: "y" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "rule id 'a' is used twice"},
        BadRule{"bad class",
                R"pb(rule { id: "a" failure_class: "Port In Use" any: "x" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "not a lower_snake_case id"},
        BadRule{"confidence",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 1.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "confidence 1.5 is not in (0, 1]"},
        BadRule{"no pattern",
                R"pb(rule { id: "a" failure_class: "port_in_use" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "needs at least one pattern"},
        BadRule{"unknown with pattern",
                R"pb(rule { id: "u" failure_class: "unknown" any: "x" confidence: 0.1
                            remediation { kind: REMEDIATION_KIND_HUMAN action: "human" } })pb",
                "takes no patterns"},
        BadRule{"no remediation",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5 })pb",
                "needs at least one remediation"},
        BadRule{"unknown action",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "reboot_node" } })pb",
                "unknown action 'reboot_node'"},
        BadRule{"no kind",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5
                            remediation { action: "retry" } })pb",
                "kind is not set"},
        BadRule{"failover kind mismatch",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "failover" } })pb",
                "action 'failover' needs kind REMEDIATION_KIND_FAILOVER"},
        BadRule{"empty pattern",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "any[0] is empty"},
        BadRule{"scope without any",
                R"pb(rule { id: "a" failure_class: "port_in_use" all: "x" confidence: 0.5
                            scope: MATCH_SCOPE_FRAMES
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "scope MATCH_SCOPE_FRAMES needs patterns in 'any'"},
        BadRule{"bad follow-on pattern",
                R"pb(follow_on_error: "(unclosed"
                     rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "follow_on_error[0] '(unclosed' is not a valid RE2 pattern"},
        BadRule{"hidden cause of its own class",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5
                            hidden_cause { failure_class: "port_in_use" confidence: 0.5 }
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "hidden_cause[0]: failure_class 'port_in_use' must be another class"},
        BadRule{"hidden cause confidence",
                R"pb(rule { id: "a" failure_class: "port_in_use" any: "x" confidence: 0.5
                            hidden_cause { failure_class: "no_cache_blocks" }
                            remediation { kind: REMEDIATION_KIND_AUTO action: "retry" } })pb",
                "hidden_cause[0]: confidence 0 is not in (0, 1]"}),
    [](const ::testing::TestParamInfo<BadRule>& info) {
      std::string name = info.param.name;
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(DiagnosisRulesTest, ClassifierCreateRevalidates) {
  dcufleet::v1::DiagnosisRules rules;
  auto* rule = rules.add_rule();
  rule->set_id("broken");
  rule->set_failure_class("port_in_use");
  rule->add_any("[unclosed");
  rule->set_confidence(0.5);
  auto* r = rule->add_remediation();
  r->set_kind(dcufleet::v1::REMEDIATION_KIND_AUTO);
  r->set_action("change_port");
  auto classifier = LogClassifier::Create(rules, "inline");
  ASSERT_FALSE(classifier.ok());
  EXPECT_THAT(std::string(classifier.status().message()), HasSubstr("rule 'broken'"));
}

}  // namespace
}  // namespace dcu::modelkit
