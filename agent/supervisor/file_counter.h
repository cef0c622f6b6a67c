#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace dcu::agent {

// Counts the files under a directory: the supervisor's view of Triton
// compiling (files appearing in the instance's TRITON_CACHE_DIR). An
// interface so that supervisor tests can state the counts.
class FileCounter {
 public:
  virtual ~FileCounter() = default;
  // Regular files under `dir`, recursively, at most `limit` (a count that
  // reaches it stops there: a huge cache costs bounded time). NOT_FOUND when
  // `dir` does not exist (yet: Triton creates it on first use).
  virtual absl::StatusOr<int64_t> CountFiles(const std::string& dir, int64_t limit) = 0;
};

// opendir/readdir, depth at most 8, symbolic links not followed.
class DirectoryFileCounter : public FileCounter {
 public:
  absl::StatusOr<int64_t> CountFiles(const std::string& dir, int64_t limit) override;
};

}  // namespace dcu::agent
