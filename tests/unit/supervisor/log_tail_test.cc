#include "agent/supervisor/log_tail.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

TEST(LogTailTest, LastLinesSplitsOnBothSeparatorsAndDropsPartialFirstLine) {
  auto lines = LastLogLines("tial line\nA\r\nB\rC\n\nD", 3);
  EXPECT_EQ(lines, (std::vector<std::string>{"B", "C", "D"}));
  auto all = LastLogLines("first\nsecond\n", 10, /*starts_at_line=*/true);
  EXPECT_EQ(all, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(LastLogLines("cut\nwhole\n", 10), (std::vector<std::string>{"whole"}));
}

}  // namespace
}  // namespace dcu::agent
