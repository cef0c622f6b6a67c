#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

// Resolves `path` (every symlink, "..", ".") and returns the real path when it
// is one of `roots` or lies below one of them; roots are resolved the same
// way. The agent uses it for model directories, so a deployment cannot make
// it read (or link an overlay to) anything outside the configured model
// roots, whether by "../" or by a symlink planted inside a root.
//
// Callers must use the returned path, not `path`: a symlink swapped after
// the check cannot redirect what is already resolved.
//
// Errors name `what` (e.g. "spec.model_path") and the path:
//   INVALID_ARGUMENT    empty, relative, NUL byte, longer than PATH_MAX
//   FAILED_PRECONDITION no roots configured, or no root exists
//   NOT_FOUND           the path does not exist
//   PERMISSION_DENIED   it resolves outside every root
absl::StatusOr<std::string> ConfinePath(absl::string_view path, const std::vector<std::string>& roots,
                                        absl::string_view what = "path");

// True when `path` is `root` or below it (both already absolute and
// normalised; compares whole components: "/models2" is not below "/models").
bool IsWithin(absl::string_view path, absl::string_view root);

}  // namespace dcu::common
