// PickModelSource: which node a copy comes from, and why others are passed over.
#include "controller/core/model_sources.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;
using dcufleet::v1::NodeView;

NodeView Node(const std::string& name, const std::string& address, int transfer_port = 7101) {
  NodeView v;
  v.set_name(name);
  v.set_address(address);
  v.set_state(dcufleet::v1::NODE_READY);
  v.mutable_inventory()->set_transfer_port(transfer_port);
  return v;
}

void AddCopy(NodeView* v, const std::string& path, dcufleet::v1::WeightsVerdict verdict,
             const std::string& problem = "") {
  auto* m = v->mutable_inventory()->add_models();
  m->set_path(path);
  m->mutable_weights()->set_verdict(verdict);
  if (!problem.empty()) m->mutable_weights()->add_problems()->set_message(problem);
}

dcufleet::v1::NodeModelDirectory Match(const std::string& node, const std::string& path, const std::string& model) {
  dcufleet::v1::NodeModelDirectory d;
  d.set_node(node);
  d.mutable_directory()->set_path(path);
  d.set_model(model);
  return d;
}

TEST(PickModelSourceTest, NearestCleanCopyByCatalogName) {
  std::vector<NodeView> nodes = {Node("far", "10.2.0.9"), Node("near", "10.1.0.8"), Node("target", "10.1.0.7"),
                                 Node("unverified", "10.1.0.6")};
  AddCopy(&nodes[0], "/models/Qwen3-32B", dcufleet::v1::WEIGHTS_CLEAN);
  AddCopy(&nodes[1], "/data/Qwen3-32B", dcufleet::v1::WEIGHTS_CLEAN);
  AddCopy(&nodes[3], "/models/Qwen3-32B", dcufleet::v1::WEIGHTS_NOT_VERIFIED);
  std::vector<dcufleet::v1::NodeModelDirectory> dirs = {Match("far", "/models/Qwen3-32B", "qwen3-32b"),
                                                        Match("near", "/data/Qwen3-32B", "qwen3-32b"),
                                                        Match("unverified", "/models/Qwen3-32B", "qwen3-32b")};
  auto plan = PickModelSource("qwen3-32b", "target", "", nodes, dirs);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->source_node, "near");
  EXPECT_EQ(plan->model_dir, "Qwen3-32B");
  EXPECT_EQ(plan->source_address, "10.1.0.8:7101");
  EXPECT_EQ(plan->source_path, "/data/Qwen3-32B");
  // --from forces the source.
  auto forced = PickModelSource("qwen3-32b", "target", "far", nodes, dirs);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(forced->source_node, "far");
}

TEST(PickModelSourceTest, DamagedAndNonServingCopiesArePassedOverWithTheReason) {
  std::vector<NodeView> nodes = {Node("a", "127.0.0.1"), Node("b", "127.0.0.1"), Node("c", "127.0.0.1", 0)};
  AddCopy(&nodes[0], "/m/Tiny", dcufleet::v1::WEIGHTS_DAMAGED, "model-00002-of-00002.safetensors truncated");
  AddCopy(&nodes[2], "/m/Tiny", dcufleet::v1::WEIGHTS_CLEAN);
  auto plan = PickModelSource("Tiny", "b", "", nodes, {});
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kNotFound) << plan.status();
  EXPECT_THAT(plan.status().message(), HasSubstr("a: /m/Tiny is damaged (model-00002-of-00002.safetensors truncated)"));
  EXPECT_THAT(plan.status().message(), HasSubstr("c: serves no peers (dcu-agent --transfer-listen)"));
}

TEST(PickModelSourceTest, TargetStatesAreChecked) {
  std::vector<NodeView> nodes = {Node("a", "127.0.0.1"), Node("b", "127.0.0.1")};
  AddCopy(&nodes[0], "/m/Tiny", dcufleet::v1::WEIGHTS_CLEAN);
  EXPECT_EQ(PickModelSource("Tiny", "x", "", nodes, {}).status().code(), absl::StatusCode::kNotFound);
  AddCopy(&nodes[1], "/m/Tiny", dcufleet::v1::WEIGHTS_CLEAN);
  auto already = PickModelSource("Tiny", "b", "", nodes, {});
  EXPECT_EQ(already.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(already.status().message(), HasSubstr("node 'b' already has Tiny at /m/Tiny"));
  nodes[1].set_state(dcufleet::v1::NODE_NOT_READY);
  EXPECT_EQ(PickModelSource("Tiny", "b", "", nodes, {}).status().code(), absl::StatusCode::kFailedPrecondition);
  // A damaged copy on the target is not written over.
  nodes[1] = Node("b", "127.0.0.1");
  AddCopy(&nodes[1], "/m/Tiny", dcufleet::v1::WEIGHTS_DAMAGED);
  auto damaged = PickModelSource("Tiny", "b", "", nodes, {});
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(damaged.status().message(), HasSubstr("move it out of the model root first"));
}

}  // namespace
}  // namespace dcu::controller
