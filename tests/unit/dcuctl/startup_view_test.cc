// dcuctl's one rendering of a start-up (progress, deploy --watch, describe)
// and `dcuctl progress --log` on a file of the corpus.
#include "dcuctl/startup_view.h"

#include <sstream>

#include "dcuctl/progress_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modelkit/startup_progress.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;

TEST(StartupViewTest, LoadingShowsABarRateAndEtaAndTimeInPhase) {
  auto p = modelkit::ParseStartupLog(
      "Loading safetensors checkpoint shards:  41% Completed | 7/17 [00:36<00:51,  5.10s/it]\n");
  p.set_phase_since_ms(1000);
  EXPECT_EQ(StartupLine(p, 81000),
            "loading_weights (shard 7/17) [############..................] 7/17 5.1 s/shard, "
            "ETA 51s; 1m20s in phase");
}

TEST(StartupViewTest, ReadyKeepsTheFiguresAUserReadsFromTheLog) {
  auto p = modelkit::ParseStartupLog(
      "Model loading took 15.2661 GiB and 70.20 seconds\n"
      "GPU KV cache size: 646,000 tokens\n"
      "Maximum concurrency for 8,192 tokens per request: 78.86x\n"
      "INFO:     Application startup complete.\n");
  EXPECT_EQ(StartupFigures(p),
            "weights 15.27 GiB in 70.2 s, KV 646,000 tokens, max concurrency 78.86x at 8,192 tokens");
  EXPECT_THAT(StartupLine(p), HasSubstr("ready: weights 15.27 GiB"));
}

TEST(StartupViewTest, ProgressCommandOnACorpusLog) {
  const char* dir = std::getenv("DCU_SOURCE_DIR");
  std::string path = std::string(dir ? dir : ".") +
                     "/tests/data/startup-logs/vllm-pr20707_v1_init_engine_ok.log";
  std::ostringstream out, err;
  ASSERT_EQ(RunProgressLog({.log_path = path, .output = "table"}, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("PHASE   kv_cache_sized"));
  EXPECT_THAT(out.str(), HasSubstr("922,496"));
  EXPECT_THAT(out.str(), HasSubstr("L2: GPU KV cache size: 922,496 tokens"));
  std::ostringstream json;
  ASSERT_EQ(RunProgressLog({.log_path = path, .output = "json"}, json, err), 0);
  auto j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j["phase"], "kv_cache_sized");
  EXPECT_EQ(j["figures"]["kv_tokens"], 922496);
  EXPECT_EQ(RunProgressLog({.log_path = "/nonexistent", .output = "table"}, out, err), 2);
}

}  // namespace
}  // namespace dcu::dcuctl
