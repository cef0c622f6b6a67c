#include "common/logging.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"

namespace dcu::common {
namespace {

// Runs `write` with stderr sent to a file and returns what was written.
template <typename F>
std::string CaptureStderr(const std::string& path, F write) {
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  EXPECT_GE(fd, 0);
  dup2(fd, STDERR_FILENO);
  close(fd);
  write();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LogLinesTest, EveryMessageIsOneWholeLineInOrderAcrossChunks) {
  testing::TempDir dir;
  SetLogComponent("dcu-test");
  SetLogLevel(LogLevel::kInfo);
  // ~200 KB: more than the 64 KiB a write carries.
  std::vector<std::string> messages;
  for (int i = 0; i < 2000; ++i) {
    messages.push_back(absl::StrCat("deployment 'd-", i, "' Scheduled: ", std::string(80, 'x')));
  }
  std::string out = CaptureStderr(dir.path() + "/stderr", [&] { LogLines(LogLevel::kInfo, messages); });
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), messages.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    // "2026-12-05T01:02:03.456Z I dcu-test] <message>", as LogLine writes.
    const size_t at = lines[i].find(" I dcu-test] ");
    ASSERT_NE(at, std::string::npos) << lines[i];
    EXPECT_EQ(lines[i].substr(at + 13), messages[i]);
    EXPECT_EQ(at, 24u) << lines[i];
  }
}

TEST(LogLinesTest, BelowTheLevelNothingIsWritten) {
  testing::TempDir dir;
  SetLogLevel(LogLevel::kWarning);
  std::string out = CaptureStderr(dir.path() + "/stderr", [] {
    LogLines(LogLevel::kInfo, {"not shown"});
    LogLines(LogLevel::kWarning, {});
  });
  SetLogLevel(LogLevel::kInfo);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace dcu::common
