#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"

namespace dcu::common {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Minimum level printed; set once at start-up by main.cc.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Prefix for every line (the process name, e.g. "dcu-agent").
void SetLogComponent(absl::string_view component);

// Writes one line to stderr: "2026-07-10T12:00:00.123Z I dcu-agent] message".
// Thread-safe; never throws.
void LogLine(LogLevel level, absl::string_view message);
// The same lines as LogLine for each message, with one timestamp, written
// with a few large write()s instead of one per line: for the lines a loop
// produces at once (a reconcile pass's events, thousands when a fleet fills).
// Nothing when `level` is below the minimum.
void LogLines(LogLevel level, const std::vector<std::string>& messages);

// At most `per_window` lines per `window_ms` from one call site; the first
// line after a window that suppressed some says how many. For messages a
// remote peer can cause at will (a refused stream), so a flood of them
// cannot flood the log. Thread-safe.
class LogLimiter {
 public:
  LogLimiter(int per_window, int64_t window_ms) : per_window_(per_window), window_ms_(window_ms) {}
  // True when this line may be printed; *suppressed is then the number of
  // lines dropped since the last one printed.
  bool Allow(int64_t* suppressed);

 private:
  const int per_window_;
  const int64_t window_ms_;
  std::atomic<int64_t> window_start_ms_{0};
  std::atomic<int> in_window_{0};
  std::atomic<int64_t> suppressed_{0};
};

}  // namespace dcu::common

#define DCU_LOG(level, ...)                                                 \
  do {                                                                      \
    if (::dcu::common::LogLevel::level >= ::dcu::common::GetLogLevel())     \
      ::dcu::common::LogLine(::dcu::common::LogLevel::level,                \
                             ::absl::StrCat(__VA_ARGS__));                  \
  } while (0)
#define DCU_LOG_INFO(...) DCU_LOG(kInfo, __VA_ARGS__)
#define DCU_LOG_WARN(...) DCU_LOG(kWarning, __VA_ARGS__)
#define DCU_LOG_ERROR(...) DCU_LOG(kError, __VA_ARGS__)
#define DCU_LOG_DEBUG(...) DCU_LOG(kDebug, __VA_ARGS__)
