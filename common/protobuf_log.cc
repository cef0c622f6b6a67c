#include "common/protobuf_log.h"

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "google/protobuf/stubs/logging.h"

namespace dcu::common {
namespace {

std::atomic<LogLimiter*> g_limiter{nullptr};

void Handler(google::protobuf::LogLevel level, const char* filename, int line,
             const std::string& message) {
  LogLimiter* limiter = g_limiter.load();
  int64_t suppressed = 0;
  if (limiter && !limiter->Allow(&suppressed)) return;
  LogLevel ours = LogLevel::kInfo;
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      ours = LogLevel::kInfo;
      break;
    case google::protobuf::LOGLEVEL_WARNING:
      ours = LogLevel::kWarning;
      break;
    default:
      ours = LogLevel::kError;
      break;
  }
  if (ours < GetLogLevel()) return;
  LogLine(ours, absl::StrCat("protobuf (", filename ? filename : "?", ":", line, "): ", message,
                             suppressed > 0 ? absl::StrCat(" (", suppressed,
                                                           " similar lines suppressed)")
                                            : ""));
}

}  // namespace

void RouteProtobufLogs(int per_minute) {
  // Leaked on purpose: protobuf may log until the process exits.
  static LogLimiter* limiter = new LogLimiter(per_minute, 60000);
  g_limiter.store(limiter);
  google::protobuf::SetLogHandler(&Handler);
}

}  // namespace dcu::common
