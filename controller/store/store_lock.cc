#include "controller/store/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dcu::controller {
namespace {

std::string ReadHolder(int fd) {
  char buf[512];
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  // Only printable text of the first line reaches the message.
  s = s.substr(0, s.find('\n'));
  for (char& c : s) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return s;
}

absl::Status WriteHolder(int fd, absl::string_view holder) {
  std::string line = absl::StrCat(holder, "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    return absl::InternalError(absl::StrCat("writing the holder: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StoreLock> StoreLock::Acquire(const std::string& db_path, absl::string_view holder) {
  if (db_path == ":memory:") return StoreLock("", -1);
  std::string path = absl::StrCat(db_path, ".lock");
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    std::string msg = absl::StrCat("cannot open the store lock '", path, "': ", std::strerror(err));
    return err == EACCES || err == EPERM || err == EROFS ? absl::PermissionDeniedError(msg)
                                                         : absl::InternalError(msg);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string who = ReadHolder(fd);
    close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database '", db_path, "' is owned by another dcu-controller (",
          who.empty() ? "holder unknown" : who, "; lock '", path,
          "'): one controller per store — stop that one first, or give this one another --db"));
    }
    return absl::InternalError(absl::StrCat("cannot lock '", path, "': ", std::strerror(err)));
  }
  StoreLock lock(path, fd);
  if (absl::Status s = lock.UpdateHolder(holder); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("store lock '", path, "': ", s.message()));
  }
  return lock;
}

StoreLock::StoreLock(StoreLock&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

StoreLock& StoreLock::operator=(StoreLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

StoreLock::~StoreLock() {
  // Closing drops the flock. The file stays: removing it would race with a
  // controller that just opened it and is about to lock it.
  if (fd_ >= 0) close(fd_);
}

absl::Status StoreLock::UpdateHolder(absl::string_view holder) {
  if (fd_ < 0) return absl::OkStatus();
  return WriteHolder(fd_, holder);
}

}  // namespace dcu::controller
