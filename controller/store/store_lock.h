#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/file_lock.h"

namespace dcu::controller {

// One controller per store. Two controllers on one database each see only
// their own deployments and both push assignments to the same agents
// (measured: 10 deploys split 5/5), so a controller holds an exclusive lock
// on "<db>.lock" for its whole life. The lock is flock(2): the kernel drops
// it when the process dies, however it dies, so a SIGKILLed controller
// never leaves a stale lock behind. The file holds a line naming the
// holder (pid, listen address, start time) for the refusal message.
class StoreLock {
 public:
  // FAILED_PRECONDITION naming the holder when another process holds the
  // lock; PERMISSION_DENIED / other errors naming the lock file otherwise.
  // ":memory:" needs no lock (a fresh private database).
  static absl::StatusOr<StoreLock> Acquire(const std::string& db_path, absl::string_view holder);

  StoreLock(StoreLock&&) noexcept = default;
  StoreLock& operator=(StoreLock&&) noexcept = default;
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  // Rewrites the holder line (e.g. once the real port is bound).
  absl::Status UpdateHolder(absl::string_view holder);
  const std::string& path() const { return path_; }

 private:
  StoreLock(std::string path, std::unique_ptr<common::ExclusiveFileLock> lock)
      : path_(std::move(path)), lock_(std::move(lock)) {}
  std::string path_;
  std::unique_ptr<common::ExclusiveFileLock> lock_;  // null for ":memory:"
};

}  // namespace dcu::controller
