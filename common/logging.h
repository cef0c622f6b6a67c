#pragma once

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
