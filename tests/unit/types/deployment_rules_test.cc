// dcuctl deploy's options, the service edge (ValidateDeploymentSpec) and the
// deploy core (DeployController admission) accept and refuse the same
// DeploymentSpec numbers, with the same words, at every boundary of the
// table in common/deployment_rules.h.

#include "common/deployment_rules.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/input_rules.h"
#include "controller/core/deploy_controller.h"
#include "controller/store/sqlite_deployment_store.h"
#include "controller/store/sqlite_store.h"
#include "dcuctl/deploy_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_knowledge.h"

namespace dcu {
namespace {

using common::DeploymentNumberRule;
using ::testing::HasSubstr;

// What one layer said about a value: ok, or the refusal without the label
// ("spec.tp: " / "--tp: ") that differs between layers.
struct Answer {
  bool ok = true;
  std::string why;
};

Answer FromStatus(const absl::Status& s, absl::string_view label) {
  if (s.ok()) return {};
  std::string m(s.message());
  std::string prefix = absl::StrCat(label, ": ");
  EXPECT_TRUE(absl::StartsWith(m, prefix)) << m;
  return {false, absl::StartsWith(m, prefix) ? m.substr(prefix.size()) : m};
}

class DeploymentRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*controller::SqliteStore::Open(":memory:"));
    deploy_store_ = std::make_unique<controller::SqliteDeploymentStore>(store_->database());
    fleet_ = std::make_unique<controller::FleetState>(store_.get(), store_.get(), &clock_,
                                                      controller::FleetState::Options());
    controller::DeployController::Options o;
    o.interval = absl::ZeroDuration();
    controller_ = std::make_unique<controller::DeployController>(
        fleet_.get(), &knowledge_, &diagnoser_, deploy_store_.get(), store_.get(), &clock_, o);
  }

  // The other numbers a value is tried with, so that only `rule` decides
  // (the back-off pair is also checked across fields).
  static std::vector<std::pair<std::string, std::string>> Companions(const DeploymentNumberRule& rule) {
    if (rule.field == "backoff_initial_s") return {{"--backoff-max", "604800"}};
    if (rule.field == "backoff_max_s") return {{"--backoff", "1"}};
    return {};
  }

  Answer Cli(const DeploymentNumberRule& rule, const std::string& value) {
    CLI::App app;
    dcufleet::v1::DeploymentSpec spec;
    auto* deploy = app.add_subcommand("deploy");
    dcuctl::AddDeploymentSpecOptions(deploy, &spec);
    // "--tp=-1": a negative value is not read as an option.
    std::vector<std::string> args = {"dcuctl", "deploy", "qwen3-32b", absl::StrCat(rule.flag, "=", value)};
    for (auto& [f, v] : Companions(rule)) args.push_back(absl::StrCat(f, "=", v));
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      // CLI11 wraps the validator's text: "--tp: 65 is outside 0-64".
      std::string m = e.what();
      std::string prefix = absl::StrCat(rule.flag, ": ");
      size_t at = m.find(prefix);
      return {false, at == std::string::npos ? m : m.substr(at + prefix.size())};
    }
    // What the CLI accepted is what it sends.
    EXPECT_EQ(common::GetDeploymentNumber(spec, rule), std::stod(value)) << rule.flag;
    return {};
  }

  dcufleet::v1::DeploymentSpec Spec(const DeploymentNumberRule& rule, double value) {
    dcufleet::v1::DeploymentSpec spec;
    spec.set_model("qwen3-32b");
    for (auto& [f, v] : Companions(rule)) {
      for (const auto& r : common::DeploymentNumberRules()) {
        if (r.flag == f) common::SetDeploymentNumber(&spec, r, std::stod(v));
      }
    }
    common::SetDeploymentNumber(&spec, rule, value);
    return spec;
  }

  Answer Edge(const DeploymentNumberRule& rule, double value) {
    return FromStatus(common::ValidateDeploymentSpec(Spec(rule, value)),
                      absl::StrCat("spec.", rule.field));
  }

  Answer Core(const DeploymentNumberRule& rule, double value) {
    auto r = controller_->Deploy(Spec(rule, value), /*dry_run=*/true);
    // Past the limits, admission asks the model (a TP its heads do not
    // divide is refused as never schedulable): that is not a limit, so here
    // it counts as the limits letting the value through.
    if (r.status().code() == absl::StatusCode::kFailedPrecondition &&
        absl::StartsWith(r.status().message(), common::kNeverSchedulablePrefix)) {
      return {};
    }
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    }
    return FromStatus(r.status(), absl::StrCat("spec.", rule.field));
  }

  common::FakeClock clock_;
  std::unique_ptr<controller::SqliteStore> store_;
  std::unique_ptr<controller::SqliteDeploymentStore> deploy_store_;
  std::unique_ptr<controller::FleetState> fleet_;
  testing::FakeKnowledge knowledge_;
  testing::FakeDiagnoser diagnoser_;
  std::unique_ptr<controller::DeployController> controller_;
};

std::string Text(double v, bool integer) {
  return integer ? absl::StrCat(static_cast<int64_t>(v)) : absl::StrCat(v);
}

TEST_F(DeploymentRulesTest, CliEdgeAndCoreAgreeAtEveryBoundary) {
  int checked = 0;
  for (const DeploymentNumberRule& rule : common::DeploymentNumberRules()) {
    bool integer = common::IsIntegerRule(rule);
    double step = integer ? 1 : 0.01;
    // {value, allowed}: the table's own ends, one step past each, and 0.
    std::vector<std::pair<double, bool>> cases = {
        {rule.max, true},
        {rule.max + step, false},
        {rule.min, !rule.min_exclusive},
        {rule.min + step, rule.min + step <= rule.max},
        {rule.min - step, rule.min - step == 0 && rule.default_value != 0},
        {0, rule.default_value != 0 || (rule.min <= 0 && !rule.min_exclusive)},
    };
    for (auto [value, allowed] : cases) {
      SCOPED_TRACE(absl::StrCat(rule.field, " = ", value));
      Answer edge = Edge(rule, value);
      Answer core = Core(rule, value);
      EXPECT_EQ(edge.ok, allowed) << edge.why;
      // A number no deploy option sets (restarted_at_ms: rollout restart's)
      // has no CLI side to agree.
      // One deliberate difference: replicas 0 set in a request is zero
      // replicas (apply -f of a deployment scaled to zero), which the edge
      // takes; `deploy --replicas 0` is refused, pointing at scale.
      if (!rule.flag.empty() && rule.field == "replicas" && value == 0) {
        Answer cli = Cli(rule, Text(value, integer));
        EXPECT_FALSE(cli.ok);
        EXPECT_THAT(cli.why, ::testing::HasSubstr("dcuctl scale deployment NAME --replicas 0"));
        EXPECT_TRUE(edge.ok) << edge.why;
      } else if (!rule.flag.empty()) {
        Answer cli = Cli(rule, Text(value, integer));
        EXPECT_EQ(cli.ok, edge.ok) << cli.why;
        EXPECT_EQ(cli.why, edge.why);
      }
      // The core sees the value after defaults: a 0 it refuses is never one
      // the edge let through.
      EXPECT_EQ(core.why, edge.why);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6 * static_cast<int>(common::DeploymentNumberRules().size()));
}

// replicas has presence: unset takes the default, 0 set is zero (a
// deployment scaled to zero), for every other number 0 is the default.
TEST_F(DeploymentRulesTest, AnUnsetReplicasIsTheDefaultAndAZeroOneIsZero) {
  dcufleet::v1::DeploymentSpec unset;
  unset.set_model("qwen3-32b");
  EXPECT_EQ(common::ApplyDeploymentDefaults(unset).replicas(), 1);
  dcufleet::v1::DeploymentSpec zero = unset;
  zero.set_replicas(0);
  zero.set_max_num_seqs(0);
  const dcufleet::v1::DeploymentSpec applied = common::ApplyDeploymentDefaults(zero);
  EXPECT_TRUE(applied.has_replicas());
  EXPECT_EQ(applied.replicas(), 0);
  EXPECT_EQ(applied.max_num_seqs(), 16) << "a number without presence: 0 is the default";
  // The same through the wire: an older client never sends replicas 0.
  dcufleet::v1::DeploymentSpec parsed;
  ASSERT_TRUE(parsed.ParseFromString(zero.SerializeAsString()));
  EXPECT_TRUE(parsed.has_replicas());
  ASSERT_TRUE(parsed.ParseFromString(unset.SerializeAsString()));
  EXPECT_FALSE(parsed.has_replicas());
}

TEST_F(DeploymentRulesTest, NonFiniteAndFractionsAreRefusedEverywhere) {
  const DeploymentNumberRule* util = common::FindDeploymentNumberRule("gpu_memory_utilization");
  ASSERT_NE(util, nullptr);
  for (double v : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_FALSE(Edge(*util, v).ok);
    EXPECT_FALSE(Core(*util, v).ok);
  }
  EXPECT_FALSE(Cli(*util, "nan").ok);
  EXPECT_FALSE(Cli(*util, "inf").ok);
  const DeploymentNumberRule* seqs = common::FindDeploymentNumberRule("max_num_seqs");
  ASSERT_NE(seqs, nullptr);
  EXPECT_FALSE(Cli(*seqs, "1.5").ok);
  EXPECT_FALSE(Cli(*seqs, "99999999999").ok);
}

// Replicas: 1..256 at every layer (the CLI, the service edge, the core).
TEST_F(DeploymentRulesTest, ReplicasAreBoundedTheSameEverywhere) {
  const DeploymentNumberRule* replicas = common::FindDeploymentNumberRule("replicas");
  ASSERT_NE(replicas, nullptr);
  EXPECT_EQ(replicas->min, 1);
  EXPECT_EQ(replicas->max, 256);
  for (Answer a : {Cli(*replicas, "4"), Edge(*replicas, 4), Core(*replicas, 256)}) {
    EXPECT_TRUE(a.ok) << a.why;
  }
  for (Answer a : {Cli(*replicas, "257"), Edge(*replicas, 257), Core(*replicas, 100000)}) {
    EXPECT_FALSE(a.ok);
    EXPECT_THAT(a.why, HasSubstr("outside 1-256"));
  }
  EXPECT_FALSE(Cli(*replicas, "-1").ok);
  EXPECT_TRUE(Cli(*replicas, "1").ok);
  EXPECT_TRUE(Core(*replicas, 0).ok);  // 0: the default, one
}

TEST_F(DeploymentRulesTest, BackoffMaxBelowInitialIsRefusedByEdgeAndCore) {
  dcufleet::v1::DeploymentSpec s;
  s.set_model("qwen3-32b");
  s.set_backoff_initial_s(60);
  s.set_backoff_max_s(30);
  EXPECT_THAT(common::ValidateDeploymentSpec(s).message(), HasSubstr("spec.backoff_max_s: 30 is below"));
  EXPECT_THAT(controller_->Deploy(s, true).status().message(),
              HasSubstr("spec.backoff_max_s: 30 is below"));
  s.clear_backoff_max_s();  // the default, 300
  EXPECT_TRUE(common::ValidateDeploymentSpec(s).ok());
  // Compared on the values that will be used: an initial left 0 is its
  // default, 10.
  s.clear_backoff_initial_s();
  s.set_backoff_max_s(5);
  EXPECT_THAT(common::ValidateDeploymentSpec(s).message(),
              HasSubstr("spec.backoff_max_s: 5 is below backoff_initial_s 10"));
}

TEST_F(DeploymentRulesTest, DefaultsComeFromTheTable) {
  dcufleet::v1::DeploymentSpec s;
  s.set_model("qwen3-32b");
  dcufleet::v1::DeploymentSpec d = common::ApplyDeploymentDefaults(s);
  EXPECT_EQ(d.name(), "qwen3-32b");
  EXPECT_EQ(d.served_model_name(), "qwen3-32b");
  EXPECT_EQ(d.tp(), 0);  // 0 is a value of its own: the smallest that fits
  EXPECT_EQ(d.replicas(), 1);
  EXPECT_EQ(d.max_model_len(), 8192);
  EXPECT_EQ(d.max_num_seqs(), 16);
  EXPECT_DOUBLE_EQ(d.gpu_memory_utilization(), 0.9);
  EXPECT_EQ(d.backoff_initial_s(), 10);
  EXPECT_EQ(d.backoff_max_s(), 300);
  EXPECT_EQ(d.startup_timeout_s(), 14400);
  EXPECT_EQ(d.max_attempts_per_plan(), 3);
  // The core stores the spec with exactly these defaults.
  auto r = controller_->Deploy(s, /*dry_run=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->deployment().spec().SerializeAsString(), d.SerializeAsString());
  // dcuctl's help states them.
  EXPECT_EQ(common::HelpText(*common::FindDeploymentNumberRule("max_num_seqs")),
            "concurrent sequences (1-65536, default 16)");
  EXPECT_EQ(common::HelpText(*common::FindDeploymentNumberRule("gpu_memory_utilization")),
            "fraction of each device's memory the engine may use ((0.05, 1], default 0.9)");
}

// Every number of DeploymentSpec has a rule (a new field cannot skip the table).
TEST(DeploymentRulesTableTest, EveryNumberOfTheSpecHasARule) {
  const auto* desc = dcufleet::v1::DeploymentSpec::descriptor();
  for (int i = 0; i < desc->field_count(); ++i) {
    const auto* f = desc->field(i);
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) continue;
    EXPECT_NE(common::FindDeploymentNumberRule(f->name()), nullptr) << f->name();
  }
}

}  // namespace
}  // namespace dcu
