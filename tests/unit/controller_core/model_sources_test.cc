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

void AddFailedTransfer(NodeView* v, const std::string& dir, const std::string& source_address,
                       const std::string& message) {
  auto* t = v->mutable_inventory()->add_transfers();
  t->set_model_dir(dir);
  t->set_source_address(source_address);
  t->set_state(dcufleet::v1::MODEL_TRANSFER_FAILED);
  t->set_message(message);
}

// Issue 19: when no node has the model, the shared file system comes first,
// then the mirror; an origin the target failed to copy from is passed over,
// and after the last one fails nothing is asked again (until a person
// retries), so an origin that lacks the model is not asked every pass.
TEST(PlanCopyBeforeLaunchTest, SharedDirectoryThenMirrorEachPassedOverOnceItFailed) {
  NodeView target = Node("target", "10.1.0.7");
  const ModelOrigins origins{"/lustre/models", "http://mirror:8080", "Qwen/Qwen3-32B"};
  auto none = [](const NodeView&) { return std::string(); };
  auto plan = PlanCopyBeforeLaunch("qwen3-32b", target, {}, none, origins);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->shared_dir, "/lustre/models");
  EXPECT_EQ(plan->model_dir, "Qwen3-32B");
  EXPECT_EQ(plan->From(), "shared directory /lustre/models/Qwen3-32B");
  const dcufleet::v1::FetchModelCommand cmd = plan->ToCommand();
  EXPECT_EQ(cmd.source_dir(), "/lustre/models");
  EXPECT_EQ(cmd.model_dir(), "Qwen3-32B");
  EXPECT_TRUE(cmd.source_url().empty() && cmd.source_address().empty());

  AddFailedTransfer(&target, "Qwen3-32B", "/lustre/models", "model 'Qwen3-32B' not found in /lustre/models");
  plan = PlanCopyBeforeLaunch("qwen3-32b", target, {}, none, origins);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->mirror_url, "http://mirror:8080");
  EXPECT_EQ(plan->ToCommand().source_repo(), "Qwen/Qwen3-32B");

  target.mutable_inventory()->clear_transfers();
  AddFailedTransfer(&target, "Qwen3-32B", "http://mirror:8080/Qwen/Qwen3-32B", "HTTP 404");
  plan = PlanCopyBeforeLaunch("qwen3-32b", target, {}, none, origins);
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition) << plan.status();
  EXPECT_THAT(plan.status().message(), HasSubstr("the copy from mirror http://mirror:8080/Qwen/Qwen3-32B failed: HTTP 404"));
  EXPECT_THAT(plan.status().message(), HasSubstr("dcuctl model copy qwen3-32b --to target retries"));
  // Which is what a person's dcuctl model copy does: from the first again.
  auto retried = PlanOriginCopy("qwen3-32b", origins, target, absl::NotFoundError("no node"), /*person_retries=*/true);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->shared_dir, "/lustre/models");

  // A node's verified copy is nearer than either origin.
  NodeView holder = Node("holder", "10.1.0.8");
  AddCopy(&holder, "/models/Qwen3-32B", dcufleet::v1::WEIGHTS_CLEAN);
  target.mutable_inventory()->clear_transfers();
  plan = PlanCopyBeforeLaunch("qwen3-32b", target, {&holder},
                              [](const NodeView& v) { return v.name() == "holder" ? "/models/Qwen3-32B" : ""; },
                              origins);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->source_node, "holder");
}

TEST(PlanCopyBeforeLaunchTest, NoOriginSaysWhatToConfigure) {
  NodeView target = Node("target", "10.1.0.7");
  auto plan = PlanCopyBeforeLaunch("qwen3-32b", target, {}, [](const NodeView&) { return std::string(); }, {});
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(plan.status().message(), HasSubstr("no node has a usable copy of qwen3-32b"));
  EXPECT_THAT(plan.status().message(), HasSubstr("--model-shared-dir, --model-mirror"));
}

TEST(PlanSharedDirCopyTest, DirectoryIsTheRepositorysLastPartAndPathsAreChecked) {
  auto plan = PlanSharedDirCopy("qwen3-32b", "Qwen/Qwen3-32B", "/lustre/models/");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->shared_dir, "/lustre/models");
  EXPECT_EQ(plan->source_path, "/lustre/models/Qwen3-32B");
  EXPECT_EQ(plan->SourceAddress(), "/lustre/models");
  // No catalog entry: the name given is the directory.
  EXPECT_EQ(PlanSharedDirCopy("Tiny", "", "/shared")->model_dir, "Tiny");
  for (const char* bad : {"relative/dir", "/lustre/../etc", ""}) {
    EXPECT_EQ(PlanSharedDirCopy("Tiny", "", bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace dcu::controller
