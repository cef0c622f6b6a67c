#include "common/path_confine.h"

#include <climits>
#include <cstdlib>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs_util.h"

namespace dcu::common {
namespace {

absl::StatusOr<std::string> RealPath(const std::string& path, absl::string_view what) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(what, " '", path, "' does not exist"));
    }
    return ErrnoToStatus(err, what, path);
  }
  return std::string(buf);
}

}  // namespace

bool IsWithin(absl::string_view path, absl::string_view root) {
  if (root == "/") return absl::StartsWith(path, "/");
  if (!absl::StartsWith(path, root)) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

absl::StatusOr<std::string> ConfinePath(absl::string_view path, const std::vector<std::string>& roots,
                                        absl::string_view what) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, " contains a NUL byte"));
  }
  if (path.size() >= PATH_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", path.size(), " bytes long; at most ", PATH_MAX - 1, " are allowed"));
  }
  if (path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' must be an absolute path"));
  }
  if (roots.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no model roots are configured; ", what, " '", path, "' cannot be allowed"));
  }
  std::vector<std::string> real_roots;
  for (const std::string& root : roots) {
    if (root.empty() || root[0] != '/') continue;
    auto r = RealPath(root, "model root");
    if (r.ok()) real_roots.push_back(*r);
  }
  if (real_roots.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "none of the model roots exists (", absl::StrJoin(roots, ", "), "); ", what, " '", path,
        "' cannot be allowed"));
  }
  auto real = RealPath(std::string(path), what);
  if (!real.ok()) return real.status();
  for (const std::string& root : real_roots) {
    if (IsWithin(*real, root)) return *real;
  }
  std::string resolved = *real == path ? "" : absl::StrCat(" (resolves to '", *real, "')");
  return absl::PermissionDeniedError(absl::StrCat(what, " '", path, "'", resolved,
                                                  " is outside the model roots ",
                                                  absl::StrJoin(real_roots, ", ")));
}

}  // namespace dcu::common
