// Issue 19 end to end without a network: two nodes hold the same model, the
// agent's discovery scans each copy (real safetensors files), one copy has a
// truncated shard. The controller's knowledge (the shipped catalog) and the
// scheduler place the deployment on the clean copy and say, for the other
// node, which file is damaged and by how much.
#include <unistd.h>

#include <deque>
#include <iostream>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "agent/discovery/node_discovery.h"
#include "common/clock.h"
#include "controller/adapters/catalog_knowledge.h"
#include "controller/core/scheduler.h"
#include "controller/store/sqlite_catalog_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modelkit/catalog_loader.h"
#include "tests/testing/safetensors_writer.h"
#include "tests/testing/test_env.h"
#include "tests/unit/catalog/test_paths.h"

namespace dcu::controller {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using dcufleet::v1::NodeView;

constexpr int64_t kGiB = 1LL << 30;
// A catalog model whose alias is the directory name the agents report.
constexpr char kModel[] = "qwen3-0.6b";
constexpr char kDirName[] = "Qwen3-0.6B";

class DamagedModelDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteCatalogStore::Open(":memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    auto catalog = modelkit::LoadCatalogDir(testing::CatalogDir());
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    ASSERT_TRUE(store_->ImportCatalog(*catalog, absl::ToUnixMillis(clock_.Now())).ok());
    knowledge_ = std::make_unique<CatalogKnowledge>(store_.get(), &clock_);
  }

  // A Ready node with 8 gfx928 devices whose model root holds a copy of the
  // tiny checkpoint, reported as the agent reports it.
  NodeView& AddNode(const std::string& name, bool damaged) {
    const std::string dir = absl::StrCat(tmp_.path(), "/", name, "/", kDirName);
    fs::create_directories(dir);
    testing::WriteTinyModel(dir, testing::TinyModel{});
    if (damaged) {
      const std::string shard = dir + "/model-00002-of-00002.safetensors";
      EXPECT_EQ(::truncate(shard.c_str(), static_cast<off_t>(fs::file_size(shard)) - 4096), 0);
    }
    NodeView& n = views_.emplace_back();
    n.set_name(name);
    n.set_state(dcufleet::v1::NODE_READY);
    for (int i = 0; i < 8; ++i) {
      auto* d = n.mutable_inventory()->add_devices();
      d->set_index(i);
      d->set_arch("gfx928");
      for (auto* m : {d->mutable_total(), d->mutable_device_free(), d->mutable_host_free(),
                      d->mutable_schedulable_free()}) {
        m->set_bytes(64 * kGiB);
        m->set_valid(true);
      }
    }
    *n.mutable_inventory()->add_models() =
        agent::NodeDiscovery::ScanModelDirectory(dir, 256 * 1024, &cache_);
    return n;
  }

  ScheduleResult Schedule() {
    nodes_.clear();
    for (const auto& v : views_) nodes_.push_back(MakeScheduleNode(v));
    ScheduleInput in;
    in.spec.set_model(kModel);
    in.spec.set_gpu_memory_utilization(0.9);
    in.model = ModelFacts{kModel, 2 * kGiB, 16, 8, {1, 2, 4, 8}};
    in.nodes = &nodes_;
    in.plans_for_arch = [](const std::string& arch) {
      auto set = std::make_shared<ArchPlanSet>();
      auto& plan = set->plans.emplace_back();
      plan.set_arch(arch);
      plan.set_stack_id("vllm-test");
      plan.set_rank(1);
      plan.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
      plan.set_verdict(dcufleet::v1::VERDICT_WORKS);
      return ArchPlanSetPtr(std::move(set));
    };
    in.memory = [](int, int64_t total) {
      MemoryCheck m;
      m.fits = true;
      m.required_free_bytes = total / 2;
      return std::make_shared<const MemoryCheck>(std::move(m));
    };
    in.runtime_on_node = [](const dcufleet::v1::Plan&, const NodeView&) { return std::string("-"); };
    // As DeployController wires them.
    in.model_path_on_node = [this](const NodeView& n) { return knowledge_->ModelPathOnNode(kModel, n); };
    in.model_damage_on_node = [this](const NodeView& n) {
      return knowledge_->ModelDamageOnNode(kModel, n);
    };
    return controller::Schedule(in);
  }

  testing::TempDir tmp_;
  common::FakeClock clock_{absl::Now()};
  std::unique_ptr<SqliteCatalogStore> store_;
  std::unique_ptr<CatalogKnowledge> knowledge_;
  modelkit::WeightsAuditCache cache_;
  std::deque<NodeView> views_;
  std::vector<ScheduleNode> nodes_;
};

TEST_F(DamagedModelDirTest, TheCleanCopyIsChosenAndTheDamagedNodeSaysWhy) {
  NodeView& a = AddNode("node-a", /*damaged=*/true);
  AddNode("node-b", /*damaged=*/false);
  ASSERT_EQ(a.inventory().models(0).weights().verdict(), dcufleet::v1::WEIGHTS_DAMAGED);
  ASSERT_EQ(a.inventory().models(0).weights().problems(0).kind(), dcufleet::v1::WEIGHTS_SHARD_TRUNCATED);

  ScheduleResult r = Schedule();
  ASSERT_TRUE(r.placed);
  EXPECT_EQ(r.placement.node(), "node-b");
  EXPECT_THAT(r.model_path, HasSubstr("node-b/Qwen3-0.6B"));
  std::string why_a;
  for (const auto& rj : r.rejections) {
    if (rj.node() == "node-a") why_a = rj.reason();
  }
  EXPECT_THAT(why_a, HasSubstr("node-a/Qwen3-0.6B fails verification: "
                               "model-00002-of-00002.safetensors truncated: "));
  EXPECT_THAT(why_a, HasSubstr(" bytes)"));
  std::cout << "node-a: " << why_a << "\n";
}

TEST_F(DamagedModelDirTest, OnlyDamagedCopiesLeaveItUnschedulableWithTheReason) {
  AddNode("node-a", /*damaged=*/true);
  ScheduleResult r = Schedule();
  EXPECT_FALSE(r.placed);
  ASSERT_FALSE(r.rejections.empty());
  EXPECT_THAT(r.rejections[0].reason(), HasSubstr("truncated"));
}

}  // namespace
}  // namespace dcu::controller
