#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace dcu::common {

// An exclusive, non-blocking flock(2) on a file, held until destruction.
// The kernel drops it when the holder exits, however it exits (SIGKILL
// included), so a stale lock file never blocks the next start. The
// descriptor is close-on-exec: processes the holder starts do not keep it.
class ExclusiveFileLock {
 public:
  // ABORTED when another process holds it (the message names the file and
  // what the holder wrote with DescribeHolder); UNAVAILABLE when the file
  // cannot be opened or locked at all.
  static absl::StatusOr<std::unique_ptr<ExclusiveFileLock>> TryAcquire(const std::string& path);
  ~ExclusiveFileLock();
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;

  // Replaces the file's contents with one line saying who holds it (for the
  // error a second process gets). Best effort: the lock is what counts.
  void DescribeHolder(const std::string& line);

 private:
  ExclusiveFileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace dcu::common
