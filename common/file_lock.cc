#include "common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dcu::common {

namespace {
// What the holder wrote, its first line at most, for the refusal's message.
std::string ReadHolderLine(int fd) {
  char buf[512];
  ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  std::string line(buf, static_cast<size_t>(n));
  line = line.substr(0, line.find('\n'));
  // Only printable text reaches a terminal.
  for (char& c : line) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return line;
}
}  // namespace

absl::StatusOr<std::unique_ptr<ExclusiveFileLock>> ExclusiveFileLock::TryAcquire(
    const std::string& path, std::string* holder) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    std::string msg = absl::StrCat("cannot open lock file '", path, "': ", std::strerror(err));
    return err == EACCES || err == EPERM || err == EROFS ? absl::PermissionDeniedError(msg)
                                                         : absl::UnavailableError(msg);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      std::string who = ReadHolderLine(fd);
      ::close(fd);
      if (holder != nullptr) *holder = who;
      return absl::AbortedError(absl::StrCat("'", path, "' is locked by another process",
                                             who.empty() ? "" : absl::StrCat(" (", who, ")")));
    }
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot lock '", path, "': ", std::strerror(err)));
  }
  return std::unique_ptr<ExclusiveFileLock>(new ExclusiveFileLock(fd, path));
}

ExclusiveFileLock::~ExclusiveFileLock() { ::close(fd_); }

absl::Status ExclusiveFileLock::DescribeHolder(absl::string_view line) {
  std::string text = absl::StrCat(line, "\n");
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return absl::InternalError(
        absl::StrCat("writing the holder to '", path_, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace dcu::common
