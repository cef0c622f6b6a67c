#include "modelkit/diagnosis/context_condition.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dcu::modelkit {
namespace {

RE2::Options ConditionOptions() {
  RE2::Options o;
  o.set_log_errors(false);
  return o;
}

using Resolved = CompiledCondition::Resolved;

std::optional<Resolved> FromCaller(const std::map<std::string, std::string>& facts,
                                   const std::string& key) {
  auto it = facts.find(key);
  if (it == facts.end() || it->second.empty()) return std::nullopt;
  return Resolved{it->second, "given"};
}

std::optional<Resolved> FromLog(const std::string& value, int line) {
  if (value.empty()) return std::nullopt;
  return Resolved{value, line > 0 ? absl::StrCat("log L", line) : "log"};
}

}  // namespace

const std::vector<std::string>& ConditionComponents() {
  static const auto* components =
      new std::vector<std::string>{"engine", "dtk", "torch", "triton", "flash_attn", "python"};
  return *components;
}

std::string VersionFactOf(absl::string_view component) {
  return absl::StrCat("stack.", component, "_version");
}

absl::Status CheckCondition(const dcufleet::v1::ContextCondition& when, absl::string_view where) {
  return CompiledCondition::Compile(when, where).status();
}

absl::StatusOr<CompiledCondition> CompiledCondition::Compile(
    const dcufleet::v1::ContextCondition& when, absl::string_view where) {
  CompiledCondition out;
  auto compile = [&](Fact fact, std::string component, absl::string_view field,
                     const std::vector<std::string>& patterns) -> absl::Status {
    if (patterns.empty()) return absl::OkStatus();
    Check check{fact, std::move(component), "", "", {}};
    // What the fact is called in a basis and under which key a caller gives
    // it, fixed here rather than worked out at every Holds.
    switch (fact) {
      case Fact::kArch:
        check.name = check.caller_key = "arch";
        break;
      case Fact::kPlatform:
        check.name = check.caller_key = "platform";
        break;
      case Fact::kEngine:
        check.name = "engine";
        check.caller_key = "stack.engine";
        break;
      case Fact::kVersion:
        check.name = check.component;
        check.caller_key = VersionFactOf(check.component);
        break;
    }
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (patterns[i].empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": when.", field, "[", i, "] is empty"));
      }
      auto re = std::make_unique<RE2>(patterns[i], ConditionOptions());
      if (!re->ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": when.", field, "[", i, "] '",
                                                       patterns[i],
                                                       "' is not a valid RE2 pattern: ",
                                                       re->error()));
      }
      check.any_of.push_back(std::move(re));
    }
    out.checks_.push_back(std::move(check));
    return absl::OkStatus();
  };
  auto list = [](const auto& repeated) {
    return std::vector<std::string>(repeated.begin(), repeated.end());
  };
  if (absl::Status s = compile(Fact::kArch, "", "arch", list(when.arch())); !s.ok()) return s;
  if (absl::Status s = compile(Fact::kPlatform, "", "platform", list(when.platform())); !s.ok()) {
    return s;
  }
  if (absl::Status s = compile(Fact::kEngine, "", "engine", list(when.engine())); !s.ok()) {
    return s;
  }
  // In a fixed order, so that the basis reads the same whatever the map's.
  std::vector<std::string> components;
  for (const auto& [component, pattern] : when.version()) components.push_back(component);
  std::sort(components.begin(), components.end());
  for (const std::string& component : components) {
    const auto& known = ConditionComponents();
    if (std::find(known.begin(), known.end(), component) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": when.version names '", component,
                                                     "', not one of ",
                                                     absl::StrJoin(known, ", ")));
    }
    if (absl::Status s = compile(Fact::kVersion, component, absl::StrCat("version[", component, "]"),
                                 {when.version().at(component)});
        !s.ok()) {
      return s;
    }
  }
  return out;
}

bool CompiledCondition::Holds(const std::map<std::string, std::string>& facts,
                              const dcufleet::v1::LogContext& log,
                              std::vector<std::string>* basis) const {
  std::vector<std::string> rested;
  for (const Check& check : checks_) {
    std::optional<Resolved> fact = FromCaller(facts, check.caller_key);
    if (fact && check.fact == Fact::kPlatform) fact->value = absl::AsciiStrToLower(fact->value);
    if (!fact) fact = FromOwnLog(check, log);
    if (!fact) return false;
    bool any = false;
    for (const auto& re : check.any_of) any |= RE2::FullMatch(fact->value, *re);
    if (!any) return false;
    rested.push_back(absl::StrCat(check.name, " ", fact->value, " (", fact->from, ")"));
  }
  if (basis) *basis = std::move(rested);
  return true;
}

// What the log says of itself for a check's fact, when the caller gave none.
std::optional<CompiledCondition::Resolved> CompiledCondition::FromOwnLog(
    const Check& check, const dcufleet::v1::LogContext& log) {
  switch (check.fact) {
    case Fact::kArch:
      return FromLog(log.arch(), log.arch_line());
    case Fact::kPlatform:
      return FromLog(log.platform(), log.platform_line());
    case Fact::kEngine:
      return FromLog(log.engine(), log.engine_line());
    case Fact::kVersion:
      // A log names its engine's version; the stack's other components
      // only the caller knows.
      if (check.component == "engine") return FromLog(log.engine_version(), log.engine_line());
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace dcu::modelkit
