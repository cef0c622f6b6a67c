#include "modelkit/memory_plan.h"

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/units.h"
#include "modelkit/catalog_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::modelkit {
namespace {

using ::testing::HasSubstr;

// K100_AI: 65520 MiB per device (rocm-smi, shared/fixtures/real/gpustack-detectors),
// which vLLM prints as 63.98 GiB.
constexpr int64_t kK100Total = 65520 * common::kMiB;

class MemoryPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto catalog = LoadCatalogDir(testing::CatalogDir());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    for (const auto& m : catalog->model()) {
      if (m.name() == "qwen3-32b") qwen3_32b_ = ShapeFromCatalog(m);
      if (m.name() == "qwen3.5-27b") qwen35_27b_ = ShapeFromCatalog(m);
    }
    ASSERT_EQ(qwen3_32b_.weight_bytes, 65524246528);
  }
  dcufleet::v1::MemoryPlanRequest K100Request() {
    dcufleet::v1::MemoryPlanRequest req;
    req.set_model("qwen3-32b");
    req.set_device_total_bytes(kK100Total);
    req.set_device_free_bytes(kK100Total - 300 * common::kMiB);
    req.set_gpu_memory_utilization(0.9);
    req.set_max_model_len(32768);
    req.set_max_num_seqs(8);
    req.set_device_count(8);
    return req;
  }
  std::string Text(const dcufleet::v1::MemoryPlan& p) { return absl::StrJoin(p.explanation(), "\n"); }
  ModelShape qwen3_32b_;
  ModelShape qwen35_27b_;
};

TEST_F(MemoryPlanTest, Qwen3_32BOnK100AiChoosesTp2) {
  auto plan = PlanMemory(qwen3_32b_, K100Request());
  EXPECT_TRUE(plan.fits()) << Text(plan);
  EXPECT_TRUE(plan.tp_chosen());
  EXPECT_EQ(plan.tp(), 2);
  // TP 1 cannot hold 61.02 GiB of weights in 0.9 x 63.98 GiB.
  ASSERT_EQ(plan.tried_size(), 1);
  EXPECT_THAT(plan.tried(0), HasSubstr("TP 1: weights 61.02 GiB + overhead"));
  EXPECT_EQ(plan.weights_per_device_bytes(), 65524246528 / 2);
  // 2 x 64 layers x (8 / 2) kv heads x 128 x 2 bytes.
  EXPECT_EQ(plan.kv_bytes_per_token_per_device(), 2 * 64 * 4 * 128 * 2);
  EXPECT_EQ(plan.budget_bytes(), static_cast<int64_t>(std::llround(0.9 * kK100Total)));
  // The first seed measured 24.24 GiB of KV per device at TP 2 (方案 A).
  double kv_gib = static_cast<double>(plan.kv_available_bytes()) / common::kGiB;
  EXPECT_NEAR(kv_gib, 24.24, 0.1) << Text(plan);
  std::string text = Text(plan);
  EXPECT_THAT(text, HasSubstr("weights: 61.02 GiB / TP 2 = 30.51 GiB per device"));
  EXPECT_THAT(text, HasSubstr("budget: gpu_memory_utilization 0.9 x total 63.98 GiB = 57.59 GiB"));
  EXPECT_THAT(text, HasSubstr("chose TP 2"));
}

TEST_F(MemoryPlanTest, Tp4MatchesTheSeedsContainerKvFigure) {
  auto req = K100Request();
  req.set_tp(4);
  auto plan = PlanMemory(qwen3_32b_, req);
  EXPECT_TRUE(plan.fits());
  // 方案 B: "每卡 KV 约 39.5GiB".
  EXPECT_NEAR(static_cast<double>(plan.kv_available_bytes()) / common::kGiB, 39.5, 0.1) << Text(plan);
}

TEST_F(MemoryPlanTest, StartupRuleFailsWithTheSeedsDeviceFreeFigure) {
  auto req = K100Request();
  req.set_device_free_bytes(static_cast<int64_t>(4.8 * common::kGiB));
  req.set_tp(4);
  auto plan = PlanMemory(qwen3_32b_, req);
  EXPECT_FALSE(plan.fits());
  EXPECT_FALSE(plan.startup_ok());
  std::string text = Text(plan);
  EXPECT_THAT(text, HasSubstr("Free memory on device (4.8/63.98 GiB) on startup is less than "
                              "desired GPU memory utilization (0.9, 57.59 GiB)"));
  EXPECT_THAT(plan.failure_reason(), HasSubstr("device-view free 4.8 GiB is below 0.9 x 63.98 GiB"));
  // Choosing a TP cannot help: every size needs the same free memory per device.
  req.set_tp(0);
  auto chosen = PlanMemory(qwen3_32b_, req);
  EXPECT_FALSE(chosen.fits());
  EXPECT_EQ(chosen.tried_size(), 4);  // TP 1, 2, 4, 8
  EXPECT_THAT(chosen.failure_reason(), HasSubstr("no TP up to 8 devices fits"));
}

TEST_F(MemoryPlanTest, InvalidTpIsRefused) {
  auto req = K100Request();
  req.set_tp(3);
  auto plan = PlanMemory(qwen3_32b_, req);
  EXPECT_FALSE(plan.fits());
  EXPECT_THAT(plan.failure_reason(), HasSubstr("TP 3 does not divide the 64 attention heads"));
}

TEST_F(MemoryPlanTest, MaxModelLenTooLongForTheKvCache) {
  auto req = K100Request();
  req.set_tp(2);
  req.set_max_model_len(1 << 20);
  auto plan = PlanMemory(qwen3_32b_, req);
  EXPECT_FALSE(plan.fits());
  EXPECT_THAT(plan.failure_reason(), HasSubstr("fewer than one 1048576-token sequence"));
}

TEST_F(MemoryPlanTest, Qwen35_27bOnZ100WithAFixedKvCache) {
  // The second seed: 4x Z100 (32 GiB, 32752 MiB per rocm-smi), utilization 0.96,
  // max_model_len 1024, --kv-cache-memory-bytes 1 GiB.
  dcufleet::v1::MemoryPlanRequest req;
  req.set_device_total_bytes(32752 * common::kMiB);
  req.set_device_free_bytes(32752 * common::kMiB - 200 * common::kMiB);
  req.set_gpu_memory_utilization(0.96);
  req.set_max_model_len(1024);
  req.set_max_num_seqs(1);
  req.set_tp(4);
  req.set_kv_cache_memory_bytes(common::kGiB);
  auto plan = PlanMemory(qwen35_27b_, req);
  EXPECT_TRUE(plan.fits()) << Text(plan);
  EXPECT_EQ(plan.kv_available_bytes(), common::kGiB);
  // Only the 16 full-attention layers: 2 x 16 x 1 kv head per rank x 256 x 2.
  EXPECT_EQ(plan.kv_bytes_per_token_per_device(), 2 * 16 * 1 * 256 * 2);
  EXPECT_THAT(Text(plan), HasSubstr("KV cache fixed by --kv-cache-memory-bytes: 1.00 GiB"));
}

// A placement keeps its plan's figures (stop 45: the lines were a third of a
// deployment document); the lines a person reads are rendered from them.
TEST_F(MemoryPlanTest, PlacementRendersItsLinesFromTheFigures) {
  auto req = K100Request();
  req.set_tp(2);
  const dcufleet::v1::MemoryPlan plan = PlanMemory(qwen3_32b_, req);
  ASSERT_TRUE(plan.fits()) << Text(plan);
  dcufleet::v1::MemoryPlan figures = plan;
  figures.clear_explanation();
  figures.clear_tried();
  figures.mutable_request()->clear_model();
  EXPECT_LT(figures.ByteSizeLong(), 160u) << "figures, not text";

  dcufleet::v1::Placement pl;
  *pl.mutable_memory_plan() = figures;
  std::vector<std::string> lines = PlacementMemoryLines(pl);
  // The plan's own lines, but the start-up rule: the scheduler checks that
  // per device against each device's own free figure.
  std::vector<std::string> expected;
  for (const auto& l : plan.explanation()) {
    if (!absl::StartsWith(l, "start-up rule")) expected.push_back(l);
  }
  EXPECT_EQ(lines, expected);
  // The text itself, as the lines were stored before stop 45.
  EXPECT_THAT(lines, ::testing::ElementsAre(
      "weights: 61.02 GiB / TP 2 = 30.51 GiB per device",
      "KV cache per token per device: 2 (K,V) x 64 layers x 4 kv heads (8 / TP 2) x 128 head_dim x 2 "
      "bytes = 131072 B",
      "KV cache for one 32768-token sequence: 4.00 GiB; for max_num_seqs 8: 32.00 GiB",
      "overhead (activations, HIP context, non-torch): 2.85 GiB (default)",
      "budget: gpu_memory_utilization 0.9 x total 63.98 GiB = 57.59 GiB per device",
      "KV cache available: budget 57.59 GiB - weights 30.51 GiB - overhead 2.85 GiB = 24.22 GiB",
      "fits: KV cache holds 198441 tokens = 6 concurrent 32768-token sequences (fewer than "
      "max_num_seqs 8: longer queues, not a failure)"));

  // Devices passed over: those other instances run on as numbers, the rest
  // with their reasons.
  pl.add_devices_in_use(0);
  pl.add_devices_in_use(1);
  pl.add_devices_avoided("device 5 is held by leftover pid 4242");
  EXPECT_EQ(PlacementMemoryLines(pl).back(),
            "avoided: devices 0, 1 run other instances; device 5 is held by leftover pid 4242");
  pl.clear_devices_avoided();
  pl.clear_devices_in_use();
  pl.add_devices_in_use(3);
  EXPECT_EQ(PlacementMemoryLines(pl).back(), "avoided: device 3 runs another instance");
}

// Documents stored before stop 45 carry the lines themselves: shown as stored.
TEST(PlacementMemoryLinesTest, StoredLinesOfOlderDocumentsAreShownAsStored) {
  dcufleet::v1::Placement pl;
  pl.add_memory_explanation("weights: 15.26 GiB / TP 4 = 3.81 GiB per device");
  pl.add_memory_explanation("avoided: device 0 runs another instance");
  EXPECT_THAT(PlacementMemoryLines(pl),
              ::testing::ElementsAre("weights: 15.26 GiB / TP 4 = 3.81 GiB per device",
                                     "avoided: device 0 runs another instance"));
  EXPECT_TRUE(PlacementMemoryLines(dcufleet::v1::Placement()).empty());
}

TEST(MemoryPlanShapeTest, KvHeadsReplicatedBeyondTheirCount) {
  ModelShape m;
  m.num_attention_heads = 28;
  m.num_kv_heads = 4;
  m.head_dim = 128;
  m.attention_layers = 28;
  m.dtype_bytes = 2;
  EXPECT_EQ(m.KvBytesPerTokenPerDevice(1), 2 * 28 * 4 * 128 * 2);
  EXPECT_EQ(m.KvBytesPerTokenPerDevice(28), 2 * 28 * 1 * 128 * 2);
  EXPECT_THAT(KvFormulaText(m.Kv(), 28), HasSubstr("1 kv head (4 kv heads replicated over TP 28)"));
}

TEST(MemoryPlanShapeTest, GiBText) {
  EXPECT_EQ(GiBText(kK100Total), "63.98");
  EXPECT_EQ(GiBText(static_cast<int64_t>(4.8 * common::kGiB)), "4.8");
  EXPECT_EQ(GiBText(common::kGiB), "1");
}

}  // namespace
}  // namespace dcu::modelkit
