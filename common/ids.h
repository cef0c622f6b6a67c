#pragma once

#include <string>
#include "absl/strings/string_view.h"

namespace dcu::common {

// A random id with a readable prefix: "node-7f3a9c01d2e4".
std::string NewId(absl::string_view prefix);

// Names of nodes, deployments, models: 1-63 chars of [a-z0-9._-], starting
// with a letter or digit. Returns an explanation when invalid, "" when valid.
std::string ValidateName(absl::string_view what, absl::string_view name);

// The one instance id rule ("<deployment>-<attempt>-<hex>"): 1-128 chars of
// [A-Za-z0-9._-], starting with a letter or digit. Ids become container
// names (docker requires [A-Za-z0-9] first), state directory names on the
// agent (no ".", "..", hidden names) and argv elements (no leading '-').
// Returns "" when valid, else what is wrong as a predicate for the caller to
// put after its subject: "must start with a letter or digit".
std::string InstanceIdProblem(absl::string_view id);

}  // namespace dcu::common
