#include "agent/runtime/attached_tail.h"

#include <utility>

#include "absl/time/clock.h"

namespace dcu::agent {

AttachedTail::AttachedTail(common::ProcessRunner* runner, std::vector<std::string> argv) {
  thread_ = std::thread([this, runner, argv = std::move(argv)] {
    common::ProcessOptions o;
    o.timeout = absl::InfiniteDuration();
    o.cancel = &cancel_;
    // Only the unended lines matter; the runner's own copy stays small.
    o.max_output_bytes = 4096;
    o.on_output = [this](int stream, absl::string_view data) { Append(stream, data.data(), data.size()); };
    (void)runner->Run(argv, o);
    absl::MutexLock lock(&mu_);
    running_ = false;
  });
}

AttachedTail::~AttachedTail() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void AttachedTail::Append(int stream, const char* data, size_t n) {
  if (stream != 1 && stream != 2) return;
  absl::string_view piece(data, n);
  absl::MutexLock lock(&mu_);
  std::string& line = unended_[stream - 1];
  const size_t nl = piece.rfind('\n');
  if (nl != absl::string_view::npos) {
    const absl::string_view rest = piece.substr(nl + 1);
    line.assign(rest.data(), rest.size());
  } else {
    line.append(piece.data(), piece.size());
  }
  if (line.size() > kMaxUnendedBytes) line.erase(0, line.size() - kMaxUnendedBytes);
  changed_[stream - 1] = absl::Now();
}

bool AttachedTail::Writing(int stream) const {
  if (stream != 1 && stream != 2) return false;
  absl::MutexLock lock(&mu_);
  return !unended_[stream - 1].empty();
}

std::string AttachedTail::Latest() const {
  absl::MutexLock lock(&mu_);
  int latest = -1;
  for (int s = 0; s < 2; ++s) {
    if (unended_[s].empty()) continue;
    if (latest < 0 || changed_[s] > changed_[latest]) latest = s;
  }
  return latest < 0 ? std::string() : unended_[latest];
}

bool AttachedTail::Running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

absl::Time AttachedTail::last_used() const {
  absl::MutexLock lock(&mu_);
  return last_used_;
}

void AttachedTail::Use(absl::Time now) {
  absl::MutexLock lock(&mu_);
  last_used_ = now;
}

}  // namespace dcu::agent
