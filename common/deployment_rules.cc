#include "common/deployment_rules.h"

#include <cmath>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "common/input_rules.h"
#include "common/status_util.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace dcu::common {
namespace {

using dcufleet::v1::DeploymentSpec;
using google::protobuf::FieldDescriptor;

constexpr DeploymentNumberRule kRules[] = {
    {.field = "tp", .flag = "--tp", .min = 0, .max = 64,
     .help = "tensor-parallel size, 0: the smallest that fits"},
    {.field = "replicas", .flag = "--replicas", .min = 1, .max = 256, .default_value = 1,
     .help = "instances of the model, each on devices of its own (spread across nodes first)"},
    {.field = "max_model_len", .flag = "--max-model-len", .min = 16, .max = 16777216,
     .default_value = 8192, .help = "context length"},
    {.field = "max_num_seqs", .flag = "--max-num-seqs", .min = 1, .max = 65536,
     .default_value = 16, .help = "concurrent sequences"},
    {.field = "gpu_memory_utilization", .flag = "--gpu-memory-utilization", .min = 0.05,
     .max = 1.0, .min_exclusive = true, .default_value = 0.9,
     .help = "fraction of each device's memory the engine may use"},
    {.field = "backoff_initial_s", .flag = "--backoff", .min = 1, .max = 86400,
     .default_value = 10, .help = "first retry delay, seconds"},
    {.field = "backoff_max_s", .flag = "--backoff-max", .min = 1, .max = 7 * 86400,
     .default_value = 300, .help = "longest retry delay, seconds"},
    {.field = "startup_timeout_s", .flag = "--startup-timeout", .min = 1, .max = 7 * 86400,
     .default_value = 14400,
     .help = "ceiling, seconds a launch may take to serve (a launch that stops progressing "
             "fails sooner, by its stack's stall windows)"},
    {.field = "max_attempts_per_plan", .flag = "--max-attempts-per-plan", .min = 1, .max = 1000,
     .default_value = 3, .help = "launches of one stack before failing over to the next"},
    // Set by `dcuctl rollout restart`, not a deploy option (no flag). Up to
    // the year 2200: a time, not any 64-bit number.
    {.field = "restarted_at_ms", .flag = "", .min = 0, .max = 7258118400000,
     .help = "when a restart was last asked for, ms since the epoch"},
};

// Each rule's field, looked up once: Deploy and DeployMany validate every
// spec with these rules, and the lookups by name (three per rule) were about
// half of ValidateDeploymentSpec's 2.6% of the controller's CPU in a
// placement wave (perf, stop 42). Keyed by the field's name, so a copy of a
// rule (dcuctl's option callbacks hold references, but nothing forbids one)
// finds it too.
const FieldDescriptor* FieldOf(const DeploymentNumberRule& rule) {
  static const auto* const fields = [] {
    auto* m = new absl::flat_hash_map<absl::string_view, const FieldDescriptor*>();
    for (const auto& r : kRules) {
      (*m)[r.field] = DeploymentSpec::descriptor()->FindFieldByName(std::string(r.field));
    }
    return m;
  }();
  return fields->at(rule.field);
}

// The value the deployment will run with: the field's, or the default when
// it is 0 and the rule has one (ApplyDeploymentDefaults writes the same). A
// field with presence (`optional`: replicas) takes the default only when
// unset; set to 0 it is 0 (replicas 0: scaled to zero).
double EffectiveDeploymentNumber(const DeploymentSpec& spec, const DeploymentNumberRule& rule) {
  const double v = GetDeploymentNumber(spec, rule);
  const FieldDescriptor* f = FieldOf(rule);
  if (f->has_presence() && spec.GetReflection()->HasField(spec, f)) return v;
  return v == 0 && rule.default_value != 0 ? rule.default_value : v;
}

std::string Number(double v, bool integer) {
  if (integer && std::isfinite(v) && std::fabs(v) < 9e18) return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrCat(v);
}

}  // namespace

absl::Span<const DeploymentNumberRule> DeploymentNumberRules() { return kRules; }

const DeploymentNumberRule* FindDeploymentNumberRule(absl::string_view field) {
  for (const auto& r : kRules) {
    if (r.field == field) return &r;
  }
  return nullptr;
}

bool IsIntegerRule(const DeploymentNumberRule& rule) {
  return FieldOf(rule)->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE;
}

std::string RangeText(const DeploymentNumberRule& rule) {
  bool integer = IsIntegerRule(rule);
  if (rule.min_exclusive) {
    return absl::StrCat("(", Number(rule.min, integer), ", ", Number(rule.max, integer), "]");
  }
  if (rule.min == rule.max) return Number(rule.min, integer);
  return absl::StrCat(Number(rule.min, integer), "-", Number(rule.max, integer));
}

std::string HelpText(const DeploymentNumberRule& rule) {
  std::string text = absl::StrCat(rule.help, " (", RangeText(rule));
  if (rule.default_value != 0) {
    absl::StrAppend(&text, ", default ", Number(rule.default_value, IsIntegerRule(rule)));
  }
  if (!rule.above_max.empty()) absl::StrAppend(&text, "; ", rule.above_max);
  return absl::StrCat(text, ")");
}

absl::Status CheckDeploymentNumber(const DeploymentNumberRule& rule, double value,
                                   absl::string_view label) {
  bool integer = IsIntegerRule(rule);
  if (value == 0 && rule.default_value != 0) return absl::OkStatus();
  bool ok = std::isfinite(value) && value <= rule.max &&
            (rule.min_exclusive ? value > rule.min : value >= rule.min) &&
            (!integer || value == std::floor(value));
  if (ok) return absl::OkStatus();
  std::string shown = Number(value, integer && value == std::floor(value));
  if (std::isfinite(value) && value > rule.max && !rule.above_max.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": ", shown, ": ", rule.above_max));
  }
  std::string allowed = rule.min == rule.max && !rule.min_exclusive
                            ? absl::StrCat("must be ", RangeText(rule))
                            : absl::StrCat("is outside ", RangeText(rule));
  if (rule.default_value != 0) absl::StrAppend(&allowed, " (0: the default)");
  return absl::InvalidArgumentError(absl::StrCat(label, ": ", shown, " ", allowed));
}

double GetDeploymentNumber(const DeploymentSpec& spec, const DeploymentNumberRule& rule) {
  const FieldDescriptor* f = FieldOf(rule);
  const auto* r = spec.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r->GetInt32(spec, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return static_cast<double>(r->GetInt64(spec, f));
    default:
      return r->GetDouble(spec, f);
  }
}

void SetDeploymentNumber(DeploymentSpec* spec, const DeploymentNumberRule& rule, double v) {
  const FieldDescriptor* f = FieldOf(rule);
  const auto* r = spec->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      r->SetInt32(spec, f, static_cast<int32_t>(v));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      r->SetInt64(spec, f, static_cast<int64_t>(v));
      break;
    default:
      r->SetDouble(spec, f, v);
  }
}

DeploymentSpec ApplyDeploymentDefaults(DeploymentSpec spec) {
  if (spec.name().empty()) spec.set_name(spec.model());
  if (spec.served_model_name().empty()) spec.set_served_model_name(spec.model());
  for (const auto& rule : kRules) {
    if (rule.default_value != 0) SetDeploymentNumber(&spec, rule, EffectiveDeploymentNumber(spec, rule));
  }
  return spec;
}

// Declared in common/input_rules.h: the edge and the core call the same
// function (the core on the spec with defaults applied).
absl::Status ValidateDeploymentSpec(const DeploymentSpec& spec, absl::string_view prefix) {
  auto f = [&](absl::string_view name) {
    return prefix.empty() ? std::string(name) : absl::StrCat(prefix, ".", name);
  };
  DCU_RETURN_IF_ERROR(CheckName(f("model"), spec.model()));
  DCU_RETURN_IF_ERROR(CheckOptionalName(f("name"), spec.name()));
  DCU_RETURN_IF_ERROR(CheckOptionalName(f("node"), spec.node()));
  DCU_RETURN_IF_ERROR(CheckOptionalName(f("stack_id"), spec.stack_id()));
  if (!spec.runtime().empty() && !ParseRuntimeKind(spec.runtime())) {
    return absl::InvalidArgumentError(absl::StrCat(f("runtime"), ": '", Preview(spec.runtime()),
                                                   "' must be ", RuntimeKindChoices()));
  }
  DCU_RETURN_IF_ERROR(CheckServedModelName(f("served_model_name"), spec.served_model_name()));
  for (const auto& rule : kRules) {
    const double v = GetDeploymentNumber(spec, rule);
    // The field's label is built only for an error (no allocation per rule).
    if (!CheckDeploymentNumber(rule, v, rule.field).ok()) {
      return CheckDeploymentNumber(rule, v, f(rule.field));
    }
  }
  // Across fields, on the values that will be used (a 0 takes the default).
  auto used = [&](absl::string_view field) {
    return EffectiveDeploymentNumber(spec, *FindDeploymentNumberRule(field));
  };
  const double backoff_initial_s = used("backoff_initial_s"), backoff_max_s = used("backoff_max_s");
  if (backoff_max_s < backoff_initial_s) {
    return absl::InvalidArgumentError(absl::StrCat(f("backoff_max_s"), ": ", backoff_max_s,
                                                   " is below backoff_initial_s ", backoff_initial_s));
  }
  return absl::OkStatus();
}

}  // namespace dcu::common
