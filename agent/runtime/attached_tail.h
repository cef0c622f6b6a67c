#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/process_runner.h"

namespace dcu::agent {

// The line each of a container's two streams is still writing, read from
// `docker attach` as the engine writes it. `docker logs` shows a line only
// once it ends, or each 16 KiB of it (the log driver's buffer; measured on
// Docker 20.10): a progress bar that tqdm redraws with '\r' for the whole
// of a weights load is not there until the load is over, and the start-up
// follower would see no progress for that long (and call it a stall).
// `attach` streams what the container writes, unbuffered, stdout and
// stderr apart; only what follows each stream's last '\n' is kept.
class AttachedTail {
 public:
  // The end of an unended line kept (a redraw is at its end).
  static constexpr size_t kMaxUnendedBytes = 64 << 10;

  // Runs `argv` (the CLI's attach, which ends with the container) on a
  // thread of its own until destroyed. `runner` must outlive this.
  AttachedTail(common::ProcessRunner* runner, std::vector<std::string> argv);
  ~AttachedTail();
  AttachedTail(const AttachedTail&) = delete;
  AttachedTail& operator=(const AttachedTail&) = delete;

  // Whether stream 1 (stdout) or 2 (stderr) is writing a line: it wrote
  // since the attach began, and its last byte was not a '\n'.
  bool Writing(int stream) const;
  // The unended line (what followed the last '\n') of the stream that
  // wrote last of those writing one; empty when neither is.
  std::string Latest() const;
  // Whether the attach still runs.
  bool Running() const;
  // When a reader last asked; the runtime ends tails nobody reads.
  absl::Time last_used() const;
  void Use(absl::Time now);

 private:
  void Append(int stream, const char* data, size_t n);

  std::atomic<bool> cancel_{false};
  mutable absl::Mutex mu_;
  std::string unended_[2] ABSL_GUARDED_BY(mu_);
  absl::Time changed_[2] ABSL_GUARDED_BY(mu_) = {absl::InfinitePast(), absl::InfinitePast()};
  bool running_ ABSL_GUARDED_BY(mu_) = true;
  absl::Time last_used_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread thread_;
};

}  // namespace dcu::agent
