#include "agent/supervisor/log_progress.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

TEST(LogProgressTest, ParsesTheLastTqdmLineSeparatedByCarriageReturns) {
  // tqdm's format as in vllm-project/vllm#10661 and the first seed ("7/17").
  std::string log =
      "INFO 07-10 12:00:01 [core.py:69] Initializing a V1 LLM engine (v0.9.2)\n"
      "\rLoading safetensors checkpoint shards:   0% Completed | 0/17 [00:00<?, ?it/s]"
      "\rLoading safetensors checkpoint shards:   6% Completed | 1/17 [00:05<01:20,  5.13s/it]"
      "\rLoading safetensors checkpoint shards:  41% Completed | 7/17 [00:36<00:51,  5.10s/it]";
  LoadProgress p = ParseLoadProgress(log);
  EXPECT_TRUE(p.found);
  EXPECT_EQ(p.loaded, 7);
  EXPECT_EQ(p.total, 17);
}

TEST(LogProgressTest, WorkerPrefixedAndPtShards) {
  std::string log =
      "(Worker_TP0_EP0 pid=1892) \nLoading safetensors checkpoint shards:  47% Completed | 40/85 "
      "[13:29<17:00, 22.68s/it]\nLoading pt checkpoint shards: 100% Completed | 2/2 [00:01<00:00]\n";
  LoadProgress p = ParseLoadProgress(log);
  EXPECT_EQ(p.loaded, 2);
  EXPECT_EQ(p.total, 2);
}

TEST(LogProgressTest, NothingOrGarbage) {
  EXPECT_FALSE(ParseLoadProgress("").found);
  EXPECT_FALSE(ParseLoadProgress("Loading safetensors checkpoint shards: | x/y").found);
  EXPECT_FALSE(ParseLoadProgress("Loading safetensors checkpoint shards: | 9/4 [").found);
}

TEST(LogProgressTest, LastLinesSplitsOnBothSeparatorsAndDropsPartialFirstLine) {
  auto lines = LastLogLines("tial line\nA\r\nB\rC\n\nD", 3);
  EXPECT_EQ(lines, (std::vector<std::string>{"B", "C", "D"}));
  auto all = LastLogLines("first\nsecond\n", 10, /*starts_at_line=*/true);
  EXPECT_EQ(all, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(LastLogLines("cut\nwhole\n", 10), (std::vector<std::string>{"whole"}));
}

}  // namespace
}  // namespace dcu::agent
