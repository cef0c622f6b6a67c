#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

// An exclusive, non-blocking flock(2) on a file, held until destruction: one
// controller per store (controller/store/store_lock.h), one agent per state
// directory, one transfer per model. The kernel drops it when the holder
// exits, however it exits (SIGKILL included), so a stale lock file never
// blocks the next start; the file itself stays (removing it would race with
// a process that just opened it). The descriptor is close-on-exec: processes
// the holder starts do not keep it.
class ExclusiveFileLock {
 public:
  // ABORTED when another process holds it (the message names the file and
  // what the holder wrote with DescribeHolder, also put in `*holder`);
  // PERMISSION_DENIED when the file cannot be opened for lack of rights (or
  // a read-only file system); UNAVAILABLE for any other failure (a file
  // system without flock, say).
  static absl::StatusOr<std::unique_ptr<ExclusiveFileLock>> TryAcquire(
      const std::string& path, std::string* holder = nullptr);
  ~ExclusiveFileLock();
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;

  // Replaces the file's contents with one line saying who holds it (for the
  // error a second process gets).
  absl::Status DescribeHolder(absl::string_view line);
  const std::string& path() const { return path_; }

 private:
  ExclusiveFileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace dcu::common
