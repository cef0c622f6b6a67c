#include "dcuctl/deploy_options.h"

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/deployment_rules.h"
#include "common/enum_names.h"

namespace dcu::dcuctl {
namespace {

using common::DeploymentNumberRule;

// The number in `text`, or a reason it is none (integers for integer fields).
absl::StatusOr<double> ParseNumber(const DeploymentNumberRule& rule, const std::string& text) {
  if (common::IsIntegerRule(rule)) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(text, &v)) {
      return absl::InvalidArgumentError(absl::StrCat(rule.flag, ": '", text, "' is not a whole number"));
    }
    return static_cast<double>(v);
  }
  double v = 0;
  if (!absl::SimpleAtod(text, &v)) {
    return absl::InvalidArgumentError(absl::StrCat(rule.flag, ": '", text, "' is not a number"));
  }
  return v;
}

CLI::Validator RuleValidator(const DeploymentNumberRule& rule) {
  return CLI::Validator(
      [&rule](std::string& text) -> std::string {
        absl::StatusOr<double> v = ParseNumber(rule, text);
        if (v.ok() && *v == 0 && rule.field == "replicas") {
          // A replicas field set to 0 is zero replicas (not the default), and
          // a deploy is asked for to run the model.
          return "0: a deploy starts at least one replica; to keep a deployment with none running, "
                 "scale it: dcuctl scale deployment NAME --replicas 0";
        }
        absl::Status s = v.ok() ? common::CheckDeploymentNumber(rule, *v, rule.flag) : v.status();
        if (s.ok()) return std::string();
        // CLI11 puts the option's name in front itself.
        absl::string_view why = s.message();
        absl::ConsumePrefix(&why, absl::StrCat(rule.flag, ": "));
        return std::string(why);
      },
      common::RangeText(rule));
}

}  // namespace

CLI::Validator ScaleReplicasValidator() {
  const DeploymentNumberRule& rule = *common::FindDeploymentNumberRule("replicas");
  const int min = static_cast<int>(rule.min), max = static_cast<int>(rule.max);
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        int n = -1;
        if (!absl::SimpleAtoi(text, &n)) return absl::StrCat("'", text, "' is not a whole number");
        // Not deploy's wording: here 0 is not "the default" but zero (every
        // instance stopped, the deployment kept).
        if (n != 0 && (n < min || n > max)) return absl::StrCat(n, " is outside 0-", max);
        return std::string();
      },
      absl::StrCat("INT in [0 - ", max, "]"));
}

void AddDeploymentSpecOptions(CLI::App* deploy, dcufleet::v1::DeploymentSpec* spec) {
  using Spec = dcufleet::v1::DeploymentSpec;
  auto text = [&](const std::string& flag, std::function<void(Spec*, const std::string&)> set,
                  const std::string& help) {
    return deploy->add_option_function<std::string>(
        flag, [spec, set](const std::string& v) { set(spec, v); }, help);
  };
  text("MODEL", [](Spec* s, const std::string& v) { s->set_model(v); },
       "catalog model name (dcuctl get models)")
      ->required();
  text("--name", [](Spec* s, const std::string& v) { s->set_name(v); },
       "deployment name (default: the model name)");
  text("--node", [](Spec* s, const std::string& v) { s->set_node(v); }, "only this node");
  text("--stack", [](Spec* s, const std::string& v) { s->set_stack_id(v); },
       "only this stack (dcuctl get stacks)");
  text("--runtime", [](Spec* s, const std::string& v) { s->set_runtime(v); },
       absl::StrJoin(common::RuntimeKindNames(), "|"))
      ->check(CLI::IsMember(common::RuntimeKindNames()));
  text("--served-model-name", [](Spec* s, const std::string& v) { s->set_served_model_name(v); },
       "name clients use (default: the model)");
  for (const DeploymentNumberRule& rule : common::DeploymentNumberRules()) {
    if (rule.flag.empty()) continue;  // set by another command (rollout restart)
    deploy
        ->add_option_function<std::string>(
            std::string(rule.flag),
            [spec, &rule](const std::string& v) {
              // The validator has accepted it, so it parses.
              common::SetDeploymentNumber(spec, rule, ParseNumber(rule, v).value_or(0));
            },
            common::HelpText(rule))
        ->type_name(common::IsIntegerRule(rule) ? "INT" : "FLOAT")
        ->check(RuleValidator(rule));
  }
}

}  // namespace dcu::dcuctl
