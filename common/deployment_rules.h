#pragma once

// The numbers of a DeploymentSpec: one table of (field, dcuctl flag, range,
// default, help) that every layer reads, so dcuctl's options, the service
// edge (ValidateDeploymentSpec in common/input_rules.h) and the deploy core
// (ApplyDeploymentDefaults + ValidateDeploymentSpec) accept the same values
// and refuse the others with the same words.
//
// A request may leave a number 0: for a field with a default that means "the
// default" and ApplyDeploymentDefaults fills it in; for one without (tp) 0
// is a value of its own (tp 0: the smallest TP that fits).

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dcufleet/v1/deploy.pb.h"

namespace dcu::common {

struct DeploymentNumberRule {
  // The DeploymentSpec field ("max_num_seqs") and dcuctl deploy's option
  // ("--max-num-seqs"; empty for a number no deploy option sets).
  absl::string_view field;
  absl::string_view flag;
  // Allowed values: [min, max], or (min, max] when min_exclusive.
  double min = 0;
  double max = 0;
  bool min_exclusive = false;
  // Applied when the request leaves the field 0; 0 when there is none.
  double default_value = 0;
  // What the number is, for dcuctl's help.
  absl::string_view help;
  // The refusal of a value above max, when a range alone would not say why.
  absl::string_view above_max;
};

// Every number of DeploymentSpec, in field order.
absl::Span<const DeploymentNumberRule> DeploymentNumberRules();
// nullptr when `field` has no rule.
const DeploymentNumberRule* FindDeploymentNumberRule(absl::string_view field);
// True for the int32/int64 fields (the CLI refuses fractions for them).
bool IsIntegerRule(const DeploymentNumberRule& rule);

// "1-65536", "(0.05, 1]", "1".
std::string RangeText(const DeploymentNumberRule& rule);
// The help text dcuctl shows: "concurrent sequences (1-65536, default 16)".
std::string HelpText(const DeploymentNumberRule& rule);

// OK when `value` is allowed (0 for a field with a default counts as
// allowed); otherwise INVALID_ARGUMENT starting with `label` ("spec.tp",
// "--tp"), e.g. "spec.tp: 65: must be at most 64".
absl::Status CheckDeploymentNumber(const DeploymentNumberRule& rule, double value,
                                   absl::string_view label);

// The value of `rule`'s field in `spec`, as a double.
double GetDeploymentNumber(const dcufleet::v1::DeploymentSpec& spec,
                           const DeploymentNumberRule& rule);

// Sets `rule`'s field in `spec` (converted to the field's type).
void SetDeploymentNumber(dcufleet::v1::DeploymentSpec* spec, const DeploymentNumberRule& rule,
                         double value);

// Fills what the request left empty: name and served_model_name from the
// model, every number with a default from the table.
dcufleet::v1::DeploymentSpec ApplyDeploymentDefaults(dcufleet::v1::DeploymentSpec spec);

// The start of a Deploy refusal (FAILED_PRECONDITION) for a spec that no
// fleet could ever schedule (a TP the model's heads do not divide); dcuctl
// exits 5 (unschedulable) on it, as for an unschedulable dry run.
inline constexpr char kNeverSchedulablePrefix[] = "cannot be scheduled on any fleet: ";

}  // namespace dcu::common
