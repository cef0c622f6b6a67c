#pragma once

// "deployment/NAME", "node/NAME": how dcuctl wait and get events --for name
// one object, with the kind in any of the forms `get` accepts
// (deployment|deployments|deploy, node|nodes|no).

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace dcu::dcuctl {

struct ObjectRef {
  std::string kind;  // "deployment" or "node"
  std::string name;
};

// INVALID_ARGUMENT saying the expected shape for anything else.
absl::StatusOr<ObjectRef> ParseObjectRef(absl::string_view text);

}  // namespace dcu::dcuctl
