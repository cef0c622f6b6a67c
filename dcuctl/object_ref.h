#pragma once

// "deployment/NAME", "node/NAME": how dcuctl wait and get events --for name
// one object, with the kind in any of the forms `get` accepts
// (deployment|deployments|deploy, node|nodes|no).

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace dcu::dcuctl {

struct ObjectRef {
  std::string kind;  // "deployment" or "node"
  std::string name;
};

// INVALID_ARGUMENT saying the expected shape for anything else.
absl::StatusOr<ObjectRef> ParseObjectRef(absl::string_view text);

// The kind a KIND token names, in any of the forms `get` accepts:
// "deployment", "node", "stack", or "" for anything else.
std::string CanonicalKind(absl::string_view kind);

// "deployment/NAME" (any form of the kind) or "NAME" → NAME; "" for
// another kind (the commands that name a deployment only).
std::string DeploymentNameFromRef(const std::string& ref);

// kubectl takes `get deployment/NAME` as well as `get deployment NAME`, and
// so do describe, delete and scale (`kubectl scale --replicas=3
// deployment/mysql` is its own example). dcuctl's parser knows KIND NAME,
// so the first positional after such a verb that is KIND/NAME with a known
// KIND is split into KIND, NAME before parsing, and later KIND/NAME words
// of the same kind (`delete deployment/a deployment/b`) become their NAMEs.
// Everything else is returned as given; args[0] is the program.
std::vector<std::string> SplitKindSlashName(std::vector<std::string> args);

// The other way round, for the commands that take one KIND/NAME word
// (rollout status, wait): `deployment NAME` is joined into
// `deployment/NAME`. With `name` empty, `ref` is returned as given.
// INVALID_ARGUMENT when `ref` is not a kind but a NAME follows it.
absl::StatusOr<std::string> JoinKindAndName(const std::string& ref, const std::string& name);

}  // namespace dcu::dcuctl
