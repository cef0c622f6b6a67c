#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/diagnosis.pb.h"
#include "re2/re2.h"

namespace dcu::modelkit {

// A rule's or hidden cause's `when` (ContextCondition in diagnosis.proto):
// conditions on where the launch ran, read as typed facts. Each fact comes
// from the caller first (what the controller knows for certain: the
// placement's arch, the stack's versions) and else from what the log says
// of itself (LogContext); a fact neither gives does not hold.
//
// The components a `version` condition may name, and the caller's fact for
// each ("triton" -> "stack.triton_version").
const std::vector<std::string>& ConditionComponents();
std::string VersionFactOf(absl::string_view component);

class CompiledCondition {
 public:
  // Compiles `when`; the error names `where` and the field ("rule 'x':
  // when.arch[0] 'gfx[' is not a valid RE2 pattern: ...").
  static absl::StatusOr<CompiledCondition> Compile(const dcufleet::v1::ContextCondition& when,
                                                   absl::string_view where);

  // No field lists a value: holds always, rests on nothing.
  bool empty() const { return checks_.empty(); }

  // Whether every field holds. When it does and `basis` is given, one phrase
  // per fact it rested on, in field order: "arch gfx928 (given)",
  // "platform rocm (log L1)", "triton 3.1.0 (given)".
  bool Holds(const std::map<std::string, std::string>& facts,
             const dcufleet::v1::LogContext& log, std::vector<std::string>* basis) const;

  // The value of one fact and where it came from ("given", "log L3").
  struct Resolved {
    std::string value;
    std::string from;
  };

 private:
  enum class Fact { kArch, kPlatform, kEngine, kVersion };
  struct Check {
    Fact fact;
    // kVersion: the component ("triton", "engine").
    std::string component;
    // The fact's name in a basis ("arch", "triton") and its caller's key
    // ("arch", "stack.triton_version").
    std::string name;
    std::string caller_key;
    std::vector<std::unique_ptr<RE2>> any_of;
  };
  static std::optional<Resolved> FromOwnLog(const Check& check, const dcufleet::v1::LogContext& log);
  std::vector<Check> checks_;
};

// The loader's check of a `when` (diagnosis_rules.cc), with the same errors
// as Compile.
absl::Status CheckCondition(const dcufleet::v1::ContextCondition& when, absl::string_view where);

}  // namespace dcu::modelkit
