#pragma once

#include <string>
#include "absl/strings/string_view.h"

namespace dcu::common {

// A random id with a readable prefix: "node-7f3a9c01d2e4".
std::string NewId(absl::string_view prefix);

// Names of nodes, deployments, models: 1-63 chars of [a-z0-9._-], starting
// with a letter or digit. Returns an explanation when invalid, "" when valid.
std::string ValidateName(absl::string_view what, absl::string_view name);

}  // namespace dcu::common
