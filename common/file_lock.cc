#include "common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dcu::common {

namespace {
// What the holder wrote, one line at most, for the refusal's message.
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
    const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open lock file ", path, ": ",
                                               std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      std::string holder = ReadHolderLine(fd);
      ::close(fd);
      return absl::AbortedError(absl::StrCat(path, " is locked by another process",
                                             holder.empty() ? "" : absl::StrCat(" (", holder, ")")));
    }
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot lock ", path, ": ", std::strerror(err)));
  }
  return std::unique_ptr<ExclusiveFileLock>(new ExclusiveFileLock(fd, path));
}

ExclusiveFileLock::~ExclusiveFileLock() { ::close(fd_); }

void ExclusiveFileLock::DescribeHolder(const std::string& line) {
  if (::ftruncate(fd_, 0) != 0) return;
  std::string text = absl::StrCat(line, "\n");
  (void)!::pwrite(fd_, text.data(), text.size(), 0);
}

}  // namespace dcu::common
