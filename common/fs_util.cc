#include "common/fs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dcu::common {

std::string JoinRoot(absl::string_view root, absl::string_view path) {
  while (absl::ConsumePrefix(&path, "/")) {
  }
  std::string out(root.empty() ? "/" : root);
  if (out.back() != '/') out.push_back('/');
  absl::StrAppend(&out, path);
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view data) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "cannot create", tmp);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoToStatus(err, "cannot write", tmp);
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(err, "cannot flush", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(err, "cannot rename into place", path);
  }
  return absl::OkStatus();
}

absl::Status ErrnoToStatus(int err, absl::string_view what, absl::string_view path) {
  std::string msg = absl::StrCat(what, " '", path, "': ", strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    case EISDIR:
      return absl::FailedPreconditionError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open", path);
  std::string out;
  char buf[4096];
  while (out.size() < max_bytes) {
    ssize_t n = read(fd, buf, std::min(sizeof(buf), max_bytes - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return ErrnoToStatus(err, "cannot read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (!d) return ErrnoToStatus(errno, "cannot list", path);
  std::vector<std::string> out;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    out.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    uint64_t ia = 0, ib = 0;
    bool na = absl::SimpleAtoi(a, &ia), nb = absl::SimpleAtoi(b, &ib);
    if (na && nb) return ia < ib;
    if (na != nb) return na;
    return a < b;
  });
  return out;
}

}  // namespace dcu::common
