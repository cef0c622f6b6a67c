#include "agent/supervisor/file_counter.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dcu::agent {
namespace {

void Count(const std::string& dir, int depth, int64_t limit, int64_t* n) {
  if (depth > 8 || *n >= limit) return;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    if (*n >= limit) break;
    const char* name = e->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    std::string path = absl::StrCat(dir, "/", name);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISREG(st.st_mode)) {
      ++*n;
    } else if (S_ISDIR(st.st_mode)) {
      Count(path, depth + 1, limit, n);
    }
  }
  ::closedir(d);
}

}  // namespace

absl::StatusOr<int64_t> DirectoryFileCounter::CountFiles(const std::string& dir, int64_t limit) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("'", dir, "' does not exist"));
    return absl::UnavailableError(absl::StrCat("stat '", dir, "': ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return absl::FailedPreconditionError(absl::StrCat("'", dir, "' is not a directory"));
  int64_t n = 0;
  Count(dir, 0, limit, &n);
  return n;
}

}  // namespace dcu::agent
