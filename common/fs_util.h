#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

// Joins a filesystem root ("/" on a real host, a fixture tree in tests) and
// an absolute or relative path inside it: JoinRoot("/", "/sys/x") ==
// "/sys/x", JoinRoot("/tmp/t/root", "sys/x") == "/tmp/t/root/sys/x".
std::string JoinRoot(absl::string_view root, absl::string_view path);

// Reads a small file (sysfs, procfs) with one open/read loop; reads at most
// `max_bytes`. Errors carry the path: NOT_FOUND (ENOENT/ENOTDIR),
// PERMISSION_DENIED (EACCES/EPERM, e.g. inside a container), FAILED_PRECONDITION
// (a directory), INTERNAL otherwise.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes = 1 << 20);

// Names in a directory, without "." and "..", sorted numerically when both
// names are numbers, else lexically. Same error codes as ReadSmallFile.
absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path);

// Writes `data` to `path` through a temporary file in the same directory,
// fsynced and renamed into place: a crash leaves the old file or the new
// one, never half of either. Errors name the path.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view data);

// Maps an errno from a file operation on `path` to a status naming it.
absl::Status ErrnoToStatus(int err, absl::string_view what, absl::string_view path);

}  // namespace dcu::common
