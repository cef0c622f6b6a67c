#include "common/engine_metrics.h"

#include "gtest/gtest.h"

namespace dcu::common {
namespace {

TEST(EngineMetricsTest, LabelValuesWithSpacesAndBracesAndTimestampsParse) {
  // Label values may hold spaces and '}' (quoted); a sample may carry a
  // timestamp after its value (Prometheus text format 0.0.4).
  auto load = ParseVllmLoad(
      "vllm:num_requests_running{model_name=\"Qwen 3 {32B}\",engine=\"0\"} 4 1733000000000\n"
      "vllm:num_requests_waiting{model_name=\"a \\\"b\\\" c\"} 2.5\r\n"
      "vllm:kv_cache_usage_perc 0.25\n");
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->running, 4);
  EXPECT_EQ(load->waiting, 2.5);
  EXPECT_DOUBLE_EQ(load->kv_cache_usage, 0.25);
}

TEST(EngineMetricsTest, GarbageAndTruncatedPagesGiveNoLoad) {
  EXPECT_FALSE(ParseVllmLoad("").has_value());
  EXPECT_FALSE(ParseVllmLoad("vllm:num_requests_running{model_name=\"cut").has_value());
  EXPECT_FALSE(ParseVllmLoad("vllm:num_requests_running_total 3\n").has_value())
      << "another metric whose name starts the same";
  EXPECT_FALSE(ParseVllmLoad("vllm:num_requests_running banana\n").has_value());
  // An out-of-range cache figure is clamped, not believed.
  auto load = ParseVllmLoad("vllm:num_requests_running 1\nvllm:kv_cache_usage_perc 7\n");
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->kv_cache_usage, 1.0);
}

// Prometheus text allows NaN and ±Inf as sample values. None is a count or
// a fraction: such a sample is read as absent (the gateway's own scrape has
// no other check before its picker compares loads).
TEST(EngineMetricsTest, NotFiniteAndNegativeSamplesAreNotLoad) {
  EXPECT_FALSE(ParseVllmLoad("vllm:num_requests_running NaN\nvllm:num_requests_waiting +Inf\n")
                   .has_value());
  auto load = ParseVllmLoad(
      "vllm:num_requests_running{engine=\"0\"} 3\n"
      "vllm:num_requests_running{engine=\"1\"} NaN\n"
      "vllm:num_requests_waiting -2\n"
      "vllm:kv_cache_usage_perc NaN\n"
      "vllm:gpu_cache_usage_perc 0.5\n");
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->running, 3);
  EXPECT_EQ(load->waiting, 0);
  EXPECT_EQ(load->kv_cache_usage, 0.5);
}

}  // namespace
}  // namespace dcu::common
