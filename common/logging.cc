#include "common/logging.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace dcu::common {
namespace {
// DCU_LOG_LEVEL=debug|info|warning|error sets the starting level (benchmarks
// read the reconciler's per-pass timing at debug).
int InitialLevel() {
  const char* v = std::getenv("DCU_LOG_LEVEL");
  if (!v) return static_cast<int>(LogLevel::kInfo);
  std::string s(v);
  if (s == "debug") return static_cast<int>(LogLevel::kDebug);
  if (s == "warning") return static_cast<int>(LogLevel::kWarning);
  if (s == "error") return static_cast<int>(LogLevel::kError);
  return static_cast<int>(LogLevel::kInfo);
}
std::atomic<int> g_level{InitialLevel()};
absl::Mutex g_mu;
std::string* g_component ABSL_GUARDED_BY(g_mu) = new std::string("dcufleet");
}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void SetLogComponent(absl::string_view component) {
  absl::MutexLock lock(&g_mu);
  *g_component = std::string(component);
}

namespace {
// "2026-07-10T12:00:00.123Z I dcu-agent] ": what every line starts with.
std::string LinePrefix(LogLevel level) {
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  std::string prefix = absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()), " ",
      std::string(1, kLetters[static_cast<int>(level)]), " ");
  absl::MutexLock lock(&g_mu);
  absl::StrAppend(&prefix, *g_component, "] ");
  return prefix;
}
}  // namespace

void LogLine(LogLevel level, absl::string_view message) {
  std::string line = absl::StrCat(LinePrefix(level), message, "\n");
  // One write() per line so concurrent lines never interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

void LogLines(LogLevel level, const std::vector<std::string>& messages) {
  if (level < GetLogLevel() || messages.empty()) return;
  const std::string prefix = LinePrefix(level);
  // Chunks of about 64 KiB, each whole lines: a reader sees no torn line
  // from these writes, and memory stays bounded for a huge batch.
  constexpr size_t kChunk = 64 * 1024;
  std::string buffer;
  auto flush = [&buffer] {
    size_t done = 0;
    while (done < buffer.size()) {
      ssize_t n = ::write(STDERR_FILENO, buffer.data() + done, buffer.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // stderr gone: drop, as LogLine does
      done += static_cast<size_t>(n);
    }
    buffer.clear();
  };
  for (const std::string& m : messages) {
    absl::StrAppend(&buffer, prefix, m, "\n");
    if (buffer.size() >= kChunk) flush();
  }
  flush();
}

bool LogLimiter::Allow(int64_t* suppressed) {
  const int64_t now = absl::ToUnixMillis(absl::Now());
  int64_t start = window_start_ms_.load();
  if (now - start >= window_ms_ && window_start_ms_.compare_exchange_strong(start, now)) {
    in_window_.store(0);
  }
  if (in_window_.fetch_add(1) >= per_window_) {
    suppressed_.fetch_add(1);
    return false;
  }
  *suppressed = suppressed_.exchange(0);
  return true;
}

}  // namespace dcu::common
