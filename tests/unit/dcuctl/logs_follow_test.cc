// dcuctl logs -f: which lines of a new tail are new.
#include "dcuctl/deploy_commands.h"

#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

using Lines = std::vector<std::string>;

TEST(LogsFollowTest, PrintsWhatFollowsTheOverlap) {
  bool gap = true;
  EXPECT_EQ(NewLinesStart({}, {"a", "b"}, &gap), 0u);
  EXPECT_FALSE(gap);
  // The tail moved on by two lines.
  EXPECT_EQ(NewLinesStart({"a", "b", "c"}, {"b", "c", "d"}, &gap), 2u);
  EXPECT_FALSE(gap);
  EXPECT_EQ(NewLinesStart({"a", "b", "c"}, {"c", "d", "e"}, &gap), 1u);
  // Nothing new.
  EXPECT_EQ(NewLinesStart({"a", "b"}, {"a", "b"}, &gap), 2u);
  EXPECT_FALSE(gap);
}

TEST(LogsFollowTest, ARepeatedLineIsNotReadAgain) {
  bool gap = true;
  // "x x" then "x x y": the longest overlap is both x's, so only y is new.
  EXPECT_EQ(NewLinesStart({"x", "x"}, {"x", "x", "y"}, &gap), 2u);
  EXPECT_FALSE(gap);
}

TEST(LogsFollowTest, MoreThanATailBetweenReadsIsAGapNotSilence) {
  bool gap = false;
  // Before, no overlap printed nothing, and those lines were lost silently.
  EXPECT_EQ(NewLinesStart({"a", "b"}, {"e", "f"}, &gap), 0u);
  EXPECT_TRUE(gap);
  EXPECT_EQ(NewLinesStart({"a", "b"}, {}, &gap), 0u);
  EXPECT_FALSE(gap) << "an empty read is no gap";
}

}  // namespace
}  // namespace dcu::dcuctl
