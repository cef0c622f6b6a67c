// Deployments -> ServingSnapshot (controller/core/serving_view.h) and the
// gateway's reading of it (ServingSetOf), end to end without sockets.
#include "controller/core/serving_view.h"

#include "gateway/controller_replica_source.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"
#include <cmath>
#include <memory>

namespace dcu {
namespace {

dcufleet::v1::Deployment Dep(const std::string& name, dcufleet::v1::DeploymentPhase phase,
                             const std::string& endpoint) {
  dcufleet::v1::Deployment d;
  d.mutable_spec()->set_name(name);
  d.mutable_spec()->set_served_model_name("org/" + name);
  d.mutable_status()->set_phase(phase);
  d.mutable_status()->set_endpoint(endpoint);
  d.mutable_status()->add_attempts()->mutable_placement()->set_node("old-node");
  d.mutable_status()->add_attempts()->mutable_placement()->set_node("node-a");
  return d;
}

TEST(ServingViewTest, ReadyDeploymentIsOneReadyReplicaOthersAreKnownButNotReady) {
  std::vector<dcufleet::v1::Deployment> ds = {
      Dep("ready", dcufleet::v1::DEPLOYMENT_READY, "node-a:8001"),
      Dep("url", dcufleet::v1::DEPLOYMENT_READY, "http://10.0.0.7:8002/v1"),
      Dep("recovering", dcufleet::v1::DEPLOYMENT_PENDING, "node-a:8003"),
      Dep("new", dcufleet::v1::DEPLOYMENT_PENDING, ""),
      Dep("gone", dcufleet::v1::DEPLOYMENT_READY, "node-a:8004")};
  ds.back().mutable_status()->set_deleted(true);
  auto snap = controller::ServingSnapshotOf(ds, {});
  ASSERT_EQ(snap.models_size(), 4);

  const auto& ready = snap.models(0);
  EXPECT_EQ(ready.deployment(), "ready");
  EXPECT_EQ(ready.served_model_name(), "org/ready");
  ASSERT_EQ(ready.replicas_size(), 1);
  EXPECT_EQ(ready.replicas(0).host(), "node-a");
  EXPECT_EQ(ready.replicas(0).port(), 8001);
  EXPECT_EQ(ready.replicas(0).node(), "node-a");  // the latest attempt's
  EXPECT_TRUE(ready.replicas(0).ready());

  EXPECT_EQ(snap.models(1).replicas(0).host(), "10.0.0.7");
  EXPECT_EQ(snap.models(1).replicas(0).port(), 8002);
  EXPECT_FALSE(snap.models(2).replicas(0).ready());
  EXPECT_EQ(snap.models(3).replicas_size(), 0);

  auto set = gateway::ServingSetOf(snap);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->models.size(), 4u);
  EXPECT_TRUE(set->models[0].AnyReady());
  EXPECT_EQ(set->models[0].replicas[0].Key(), "node-a:8001");
  EXPECT_FALSE(set->models[2].AnyReady());
  EXPECT_FALSE(set->models[3].AnyReady());
}

TEST(ServingViewTest, UnusableEndpointGivesNoReplica) {
  for (const char* bad : {"node-a", "node-a:0", "node-a:99999", ":8000", "node-a:x"}) {
    auto snap = controller::ServingSnapshotOf({Dep("m", dcufleet::v1::DEPLOYMENT_READY, bad)}, {});
    ASSERT_EQ(snap.models_size(), 1);
    EXPECT_EQ(snap.models(0).replicas_size(), 0) << bad;
  }
}

TEST(ServingViewTest, GatewayRefusesASnapshotReplicaWithoutAddress) {
  dcufleet::v1::ServingSnapshot snap;
  auto* m = snap.add_models();
  m->set_deployment("m");
  m->add_replicas()->set_port(8000);
  EXPECT_FALSE(gateway::ServingSetOf(snap).ok());
}

// Issue 17: every replica of a deployment is a replica of the model, with
// its own address and readiness (the aggregate's `replicas` views).
TEST(ServingViewTest, EachReplicaOfADeploymentIsOneGatewayReplica) {
  dcufleet::v1::Deployment d = Dep("qwen", dcufleet::v1::DEPLOYMENT_LAUNCHING, "10.0.0.1:8000");
  auto add = [&](int index, dcufleet::v1::DeploymentPhase phase, const std::string& endpoint,
                 const std::string& node) {
    auto* r = d.add_replicas();
    r->set_index(index);
    r->set_phase(phase);
    r->set_endpoint(endpoint);
    r->set_node(node);
  };
  add(0, dcufleet::v1::DEPLOYMENT_READY, "10.0.0.1:8000", "node-a");
  add(1, dcufleet::v1::DEPLOYMENT_READY, "[fd00::2]:8001", "node-b");
  add(2, dcufleet::v1::DEPLOYMENT_LAUNCHING, "", "node-c");
  auto snap = controller::ServingSnapshotOf({d}, {});
  ASSERT_EQ(snap.models_size(), 1);
  const auto& m = snap.models(0);
  ASSERT_EQ(m.replicas_size(), 2) << "a replica without an endpoint yet is not routable";
  EXPECT_EQ(m.replicas(0).host(), "10.0.0.1");
  EXPECT_EQ(m.replicas(0).node(), "node-a");
  EXPECT_TRUE(m.replicas(0).ready());
  EXPECT_EQ(m.replicas(1).index(), 1);
  EXPECT_EQ(m.replicas(1).host(), "fd00::2");
  EXPECT_EQ(m.replicas(1).port(), 8001);
  EXPECT_TRUE(m.replicas(1).ready());
}

// The load each node's agent scraped reaches the replica running that
// instance; a node's implausible figures are dropped, not believed.
TEST(ServingViewTest, ReplicasCarryTheLoadTheirNodeReportedAndNothingImplausible) {
  dcufleet::v1::Deployment d = Dep("qwen", dcufleet::v1::DEPLOYMENT_READY, "10.0.0.1:8000");
  for (int i = 0; i < 3; ++i) {
    auto* r = d.add_replicas();
    r->set_index(i);
    r->set_phase(dcufleet::v1::DEPLOYMENT_READY);
    r->set_endpoint(absl::StrCat("10.0.0.", i + 1, ":8000"));
    r->set_instance_id(absl::StrCat("qwen-", i));
  }
  auto node = std::make_shared<dcufleet::v1::NodeView>();
  auto add = [&](const std::string& id, double running, double waiting, double kv) {
    auto* i = node->add_instances();
    i->set_instance_id(id);
    i->mutable_load()->set_running(running);
    i->mutable_load()->set_waiting(waiting);
    i->mutable_load()->set_kv_cache_usage(kv);
    i->mutable_load()->set_scraped_at_ms(1000);
  };
  add("qwen-0", 3, 9, 0.5);
  add("qwen-1", -1, 0, 0.1);                      // negative: a lie
  add("qwen-2", 1, std::nan(""), 0.1);            // not a number
  auto snap = controller::ServingSnapshotOf({d}, {node});
  ASSERT_EQ(snap.models(0).replicas_size(), 3);
  EXPECT_EQ(snap.models(0).replicas(0).load().running(), 3);
  EXPECT_EQ(snap.models(0).replicas(0).load().waiting(), 9);
  EXPECT_FALSE(snap.models(0).replicas(1).has_load());
  EXPECT_FALSE(snap.models(0).replicas(2).has_load());
  auto set = gateway::ServingSetOf(snap);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->models[0].replicas[0].load.waiting, 9);
}

}  // namespace
}  // namespace dcu
