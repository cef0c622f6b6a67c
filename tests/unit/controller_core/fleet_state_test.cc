#include "controller/core/fleet_state.h"

#include "controller/store/sqlite_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

class RecordingSession : public NodeSession {
 public:
  bool Send(const dcufleet::v1::ControllerMessage& m) override {
    sent.push_back(m);
    return open;
  }
  std::string Peer() const override { return "test"; }
  std::vector<dcufleet::v1::ControllerMessage> sent;
  bool open = true;
};

dcufleet::v1::Hello MakeHello(const std::string& name, int devices) {
  dcufleet::v1::Hello h;
  h.set_node_name(name);
  h.set_agent_version("0.1.0");
  for (int i = 0; i < devices; ++i) h.mutable_inventory()->add_devices()->set_index(i);
  return h;
}

class FleetStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqliteStore::Open(":memory:"));
    opts_.not_ready_after = absl::Seconds(10);
    opts_.lost_after = absl::Seconds(60);
    fleet_ = std::make_unique<FleetState>(store_.get(), store_.get(), &clock_, opts_);
  }
  dcufleet::v1::NodeState StateOf(const std::string& n) { return fleet_->GetNode(n)->state(); }

  common::FakeClock clock_;
  FleetState::Options opts_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<FleetState> fleet_;
};

TEST_F(FleetStateTest, HelloRegistersAndWelcomes) {
  RecordingSession s;
  auto w = fleet_->OnHello(MakeHello("node-a", 8), &s);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(s.sent.size(), 1u);
  EXPECT_TRUE(s.sent[0].has_welcome());
  EXPECT_EQ(s.sent[0].welcome().node_id(), w->node_id());
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_READY);
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().devices_size(), 8);
  EXPECT_EQ(store_->ListNodes()->size(), 1u);
}

TEST_F(FleetStateTest, MissedHeartbeatsGoNotReadyThenLostThenBack) {
  RecordingSession s;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &s).ok());
  clock_.Advance(absl::Seconds(9));
  fleet_->Tick();
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_READY);
  clock_.Advance(absl::Seconds(2));
  fleet_->Tick();
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_NOT_READY);
  EXPECT_THAT(fleet_->GetNode("node-a")->state_reason(), ::testing::HasSubstr("no report for 11s"));
  EXPECT_EQ((*store_->ListNodes())[0].state, "NotReady");
  clock_.Advance(absl::Seconds(50));
  fleet_->Tick();
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_LOST);
  ASSERT_TRUE(fleet_->OnStatus("node-a", dcufleet::v1::NodeStatus(), &s).ok());
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_READY);
  auto events = store_->ListEvents("node", "node-a", 0);
  ASSERT_GE(events->size(), 4u);
  EXPECT_EQ((*events)[1].reason, "NotReady");
  EXPECT_EQ((*events)[2].reason, "Lost");
  EXPECT_EQ((*events)[3].reason, "Ready");
}

TEST_F(FleetStateTest, StaleSessionCannotReportOrDisconnectTheNewOne) {
  RecordingSession old_session, new_session;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &old_session).ok());
  auto w2 = fleet_->OnHello(MakeHello("node-a", 2), &new_session);
  ASSERT_TRUE(w2.ok());
  absl::Status s = fleet_->OnStatus("node-a", dcufleet::v1::NodeStatus(), &old_session);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  fleet_->OnDisconnect("node-a", &old_session);
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_READY);
  fleet_->OnDisconnect("node-a", &new_session);
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_NOT_READY);
  EXPECT_EQ(store_->ListNodes()->size(), 1u);
}

TEST_F(FleetStateTest, ReloadAfterRestartKeepsNodesNotReadyWithSameIds) {
  RecordingSession s;
  auto w = fleet_->OnHello(MakeHello("node-a", 8), &s);
  ASSERT_TRUE(w.ok());
  FleetState restarted(store_.get(), store_.get(), &clock_, opts_);
  ASSERT_TRUE(restarted.Load().ok());
  auto n = restarted.GetNode("node-a");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->node_id(), w->node_id());
  EXPECT_EQ(n->state(), dcufleet::v1::NODE_NOT_READY);
  EXPECT_EQ(n->inventory().devices_size(), 8);
  RecordingSession s2;
  auto w2 = restarted.OnHello(MakeHello("node-a", 8), &s2);
  EXPECT_EQ(w2->node_id(), w->node_id());
}

TEST_F(FleetStateTest, InventoryPersistedAtMostOncePerInterval) {
  RecordingSession s;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &s).ok());
  dcufleet::v1::NodeStatus st;
  st.mutable_inventory()->add_devices()->set_product_name("K100_AI");
  st.mutable_inventory()->add_devices()->set_product_name("K100_AI");
  ASSERT_TRUE(fleet_->OnStatus("node-a", st, &s).ok());
  fleet_->Tick();
  EXPECT_EQ((*store_->ListNodes())[0].inventory.devices_size(), 1);  // not yet
  clock_.Advance(opts_.inventory_persist_interval);
  ASSERT_TRUE(fleet_->OnStatus("node-a", st, &s).ok());
  fleet_->Tick();
  EXPECT_EQ((*store_->ListNodes())[0].inventory.devices_size(), 2);
}

}  // namespace
}  // namespace dcu::controller
