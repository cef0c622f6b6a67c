#pragma once

// `dcuctl get ... -o jsonpath=TEMPLATE`: the subset of kubectl's JSONPath
// templates that scripts use, over the document `-o json` prints.
//
//   {.spec.name}                 a field (a missing one prints nothing)
//   {.items[0].spec.name}        an index ([-1] is the last)
//   {.items[*].spec.name}        every element, joined by one space
//   {.status['endpoint']}        a quoted field name
//   {.*} {.items[*].*}           every value of an object
//   {range .items[*]}...{end}    the text between, once per element; paths
//                                inside are relative to the element ({@} is
//                                the element itself, {$} the document)
//   {"\n"} {"\t"}                a quoted literal (escapes \n \t \" \\)
//   anything else                literal text, printed as it is
//
// Strings print bare, numbers and booleans as JSON, objects and arrays as
// compact JSON, null as nothing. A malformed template is refused with the
// position (column, from 1) of the problem; templates, nesting and output
// are bounded, so a hostile template gets an error, not a hang.

#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

namespace dcu::dcuctl {

class JsonPathTemplate {
 public:
  // Longest template accepted, deepest {range} nesting, largest output.
  static constexpr size_t kMaxTemplateBytes = 8192;
  static constexpr int kMaxRangeDepth = 8;
  static constexpr size_t kMaxOutputBytes = 16 << 20;

  // INVALID_ARGUMENT "jsonpath: column N: ..." for a malformed template.
  static absl::StatusOr<JsonPathTemplate> Parse(absl::string_view text);

  // The text for `document`. RESOURCE_EXHAUSTED past kMaxOutputBytes.
  absl::StatusOr<std::string> Execute(const nlohmann::json& document) const;

  struct Step;
  struct Node;

 private:
  std::shared_ptr<const std::vector<Node>> nodes_;
};

}  // namespace dcu::dcuctl
