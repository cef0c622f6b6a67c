#include "controller/core/fleet_state.h"

#include "common/inventory_delta.h"
#include "controller/store/sqlite_store.h"
#include "gmock/gmock.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include <map>
#include <set>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace dcu::controller {
namespace {

class RecordingSession : public NodeSession {
 public:
  bool Send(dcufleet::v1::ControllerMessage m) override {
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

// A NodeStore over a real SQLite store whose first RegisterNodes waits
// until the test opens the gate, and which records each call's size.
class GatedNodeStore : public NodeStore {
 public:
  explicit GatedNodeStore(SqliteStore* real) : real_(real) {}
  absl::StatusOr<std::vector<NodeRecord>> RegisterNodes(
      const std::vector<NodeRecord>& nodes) override {
    {
      absl::MutexLock lock(&mu_);
      batch_sizes_.push_back(nodes.size());
      if (!entered_.HasBeenNotified()) entered_.Notify();
    }
    gate_.WaitForNotification();
    if (!fail_with_.ok()) return fail_with_;
    return real_->RegisterNodes(nodes);
  }
  absl::Status UpdateNodeStates(const std::vector<StateUpdate>& updates) override {
    return real_->UpdateNodeStates(updates);
  }
  absl::Status UpdateInventory(const std::string& name, const dcufleet::v1::NodeInventory& inv,
                               int64_t last_seen_ms) override {
    return real_->UpdateInventory(name, inv, last_seen_ms);
  }
  absl::StatusOr<std::vector<NodeRecord>> ListNodes() override { return real_->ListNodes(); }
  absl::Status DeleteNode(const std::string& name) override { return real_->DeleteNode(name); }
  absl::Status SetNodeCordon(const std::string& name, const dcufleet::v1::NodeCordon* cordon) override {
    return real_->SetNodeCordon(name, cordon);
  }

  std::vector<size_t> BatchSizes() {
    absl::MutexLock lock(&mu_);
    return batch_sizes_;
  }
  absl::Notification entered_;
  absl::Notification gate_;
  absl::Status fail_with_;

 private:
  SqliteStore* const real_;
  absl::Mutex mu_;
  std::vector<size_t> batch_sizes_ ABSL_GUARDED_BY(mu_);
};

// Issue 22: a connect storm paid one commit per Hello. Hellos that arrive
// while a registration commits are queued, answered nothing yet, and go
// into the next commit together; each gets its own Welcome.
TEST_F(FleetStateTest, HellosThatArriveDuringACommitAreRegisteredInOneTransaction) {
  GatedNodeStore gated(store_.get());
  FleetState fleet(&gated, store_.get(), &clock_, opts_);
  constexpr int kLater = 9;
  std::vector<RecordingSession> sessions(kLater + 1);
  absl::Mutex mu;
  std::map<std::string, absl::StatusOr<dcufleet::v1::Welcome>> answers;
  auto answer_for = [&](const std::string& name) {
    return [&, name](absl::StatusOr<dcufleet::v1::Welcome> w) {
      absl::MutexLock lock(&mu);
      answers.emplace(name, std::move(w));
    };
  };
  // The first Hello's thread commits it and waits in the store.
  std::thread first([&] { fleet.OnHelloAsync(MakeHello("node-0", 2), &sessions[0], answer_for("node-0")); });
  gated.entered_.WaitForNotification();
  for (int i = 1; i <= kLater; ++i) {
    const std::string name = absl::StrCat("node-", i);
    // Returns at once: the committing thread takes it.
    fleet.OnHelloAsync(MakeHello(name, 2), &sessions[i], answer_for(name));
  }
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(answers.empty()) << "answered before the registration was durable";
  }
  gated.gate_.Notify();
  first.join();

  EXPECT_THAT(gated.BatchSizes(), ::testing::ElementsAre(1u, static_cast<size_t>(kLater)));
  std::set<std::string> ids;
  ASSERT_EQ(answers.size(), static_cast<size_t>(kLater + 1));
  for (int i = 0; i <= kLater; ++i) {
    const std::string name = absl::StrCat("node-", i);
    ASSERT_TRUE(answers.at(name).ok()) << name << ": " << answers.at(name).status();
    ids.insert(answers.at(name)->node_id());
    ASSERT_EQ(sessions[i].sent.size(), 1u) << name;
    EXPECT_EQ(sessions[i].sent[0].welcome().node_id(), answers.at(name)->node_id());
    EXPECT_EQ(fleet.GetNode(name)->state(), dcufleet::v1::NODE_READY);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kLater + 1)) << "node ids must differ";
  EXPECT_EQ(store_->ListNodes()->size(), static_cast<size_t>(kLater + 1));
}

// A commit that fails refuses every Hello in it, and none is half
// registered: no view, no Welcome sent, no row.
TEST_F(FleetStateTest, AFailedRegistrationCommitRefusesEveryHelloInIt) {
  GatedNodeStore gated(store_.get());
  gated.fail_with_ = absl::UnavailableError("disk I/O error");
  FleetState fleet(&gated, store_.get(), &clock_, opts_);
  constexpr int kHellos = 4;
  std::vector<RecordingSession> sessions(kHellos);
  absl::Mutex mu;
  std::map<std::string, absl::Status> answers;
  auto answer_for = [&](const std::string& name) {
    return [&, name](absl::StatusOr<dcufleet::v1::Welcome> w) {
      absl::MutexLock lock(&mu);
      answers.emplace(name, w.status());
    };
  };
  // The first commit waits in the store while three more Hellos queue, so
  // the second (failing) commit holds three.
  std::thread first([&] { fleet.OnHelloAsync(MakeHello("node-0", 2), &sessions[0], answer_for("node-0")); });
  gated.entered_.WaitForNotification();
  for (int i = 1; i < kHellos; ++i) {
    const std::string name = absl::StrCat("node-", i);
    fleet.OnHelloAsync(MakeHello(name, 2), &sessions[i], answer_for(name));
  }
  gated.gate_.Notify();
  first.join();

  EXPECT_THAT(gated.BatchSizes(), ::testing::ElementsAre(1u, 3u));
  ASSERT_EQ(answers.size(), static_cast<size_t>(kHellos));
  for (int i = 0; i < kHellos; ++i) {
    const std::string name = absl::StrCat("node-", i);
    EXPECT_EQ(answers.at(name).code(), absl::StatusCode::kUnavailable) << name;
    EXPECT_THAT(std::string(answers.at(name).message()), ::testing::HasSubstr("disk I/O error"));
    EXPECT_TRUE(sessions[i].sent.empty()) << name;
    EXPECT_FALSE(fleet.GetNode(name).has_value()) << name;
  }
  EXPECT_TRUE(store_->ListNodes()->empty());
}

// The node's address (what endpoints carry) comes from the agent's
// advertised address, else its connection's host, and outlives every status
// report (a report rebuilds the view; it once dropped the address).
TEST_F(FleetStateTest, TheNodeAddressIsAdvertisedOrObservedAndKept) {
  class PeerSession : public RecordingSession {
   public:
    std::string Peer() const override { return "ipv4:10.1.2.3:50123"; }
  } observed;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &observed).ok());
  EXPECT_EQ(fleet_->GetNode("node-a")->address(), "10.1.2.3");
  ASSERT_TRUE(fleet_->OnStatus("node-a", dcufleet::v1::NodeStatus(), &observed).ok());
  EXPECT_EQ(fleet_->GetNode("node-a")->address(), "10.1.2.3");

  RecordingSession s;
  auto hello = MakeHello("node-b", 1);
  hello.set_advertise_address("dcu-b.example.org");
  ASSERT_TRUE(fleet_->OnHello(hello, &s).ok());
  ASSERT_TRUE(fleet_->OnStatus("node-b", dcufleet::v1::NodeStatus(), &s).ok());
  EXPECT_EQ(fleet_->GetNode("node-b")->address(), "dcu-b.example.org");
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

// Many nodes silent at once (a stalled controller, a switch): one tick takes
// them all NotReady, durably, with an event each (stored in one transaction
// per kind, NodeStore::UpdateNodeStates), and each comes back on its report.
TEST_F(FleetStateTest, ATickThatFindsManyNodesSilentStoresEveryTransition) {
  constexpr int kNodes = 50;
  std::vector<std::unique_ptr<RecordingSession>> sessions;
  for (int i = 0; i < kNodes; ++i) {
    sessions.push_back(std::make_unique<RecordingSession>());
    ASSERT_TRUE(fleet_->OnHello(MakeHello(absl::StrCat("node-", i), 1), sessions.back().get()).ok());
  }
  clock_.Advance(absl::Seconds(11));
  fleet_->Tick();
  auto rows = store_->ListNodes();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), static_cast<size_t>(kNodes));
  for (const auto& r : *rows) {
    EXPECT_EQ(r.state, "NotReady") << r.name;
    EXPECT_THAT(r.state_reason, ::testing::HasSubstr("no report for 11s")) << r.name;
  }
  for (int i = 0; i < kNodes; ++i) {
    auto events = store_->ListEvents("node", absl::StrCat("node-", i), 0);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), 2u) << "node-" << i;
    EXPECT_EQ((*events)[1].reason, "NotReady");
  }
  ASSERT_TRUE(fleet_->OnStatus("node-7", dcufleet::v1::NodeStatus(), sessions[7].get()).ok());
  rows = store_->ListNodes();
  ASSERT_TRUE(rows.ok());
  for (const auto& r : *rows) EXPECT_EQ(r.state, r.name == "node-7" ? "Ready" : "NotReady") << r.name;
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

// Issue 20: an agent whose batch job ends says Goodbye; the node is Lost at
// once (no heartbeat timeout), durably, and the stream's end keeps it Lost.
// A stale session cannot make the current one Lost.
TEST_F(FleetStateTest, GoodbyeMakesTheNodeLostAtOnce) {
  RecordingSession old_session, s;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &old_session).ok());
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &s).ok());
  fleet_->OnGoodbye("node-a", "slurm job '12' ends (SIGTERM)", &old_session);
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_READY);
  fleet_->OnGoodbye("node-a", "slurm job '12' ends (SIGTERM)", &s);
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_LOST);
  EXPECT_EQ(fleet_->GetNode("node-a")->state_reason(), "agent left: slurm job '12' ends (SIGTERM)");
  EXPECT_EQ((*store_->ListNodes())[0].state, "Lost");
  fleet_->OnDisconnect("node-a", &s);
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_LOST);
  // A new job's agent under the same name comes back Ready.
  RecordingSession next;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &next).ok());
  EXPECT_EQ(StateOf("node-a"), dcufleet::v1::NODE_READY);
}

// Issue 20: a node drains while its reports say so; the drain survives
// reports that carry only the digest, ends with a new job's Hello, and a
// Lost node does not drain.
TEST_F(FleetStateTest, ADrainIsTakenFromReportsAndEndsWithTheNode) {
  RecordingSession s;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &s).ok());
  EXPECT_TRUE(fleet_->DrainingNodes().empty());
  dcufleet::v1::NodeStatus st;
  // A hostile reason is cut, not kept whole.
  st.mutable_drain()->set_reason(std::string(5000, 'x'));
  st.mutable_drain()->set_deadline_ms(absl::ToUnixMillis(clock_.Now() + absl::Minutes(5)));
  ASSERT_TRUE(fleet_->OnStatus("node-a", st, &s).ok());
  EXPECT_EQ(fleet_->DrainingNodes(), std::vector<std::string>{"node-a"});
  auto v = fleet_->GetNode("node-a");
  ASSERT_TRUE(v->has_drain());
  EXPECT_LE(v->drain().reason().size(), FleetState::kMaxDrainReason + 3);
  EXPECT_EQ(v->state(), dcufleet::v1::NODE_READY) << "a draining node still serves";
  // The same drain again: no second event.
  ASSERT_TRUE(fleet_->OnStatus("node-a", st, &s).ok());
  auto events = store_->ListEvents("node", "node-a", 0);
  ASSERT_TRUE(events.ok());
  int draining = 0;
  for (const auto& e : *events) draining += e.reason == "Draining";
  EXPECT_EQ(draining, 1);
  // The job's agent leaves: Lost, not draining.
  fleet_->OnGoodbye("node-a", "drained", &s);
  EXPECT_TRUE(fleet_->DrainingNodes().empty());
  // A new job's agent on the same name takes replicas again.
  RecordingSession next;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &next).ok());
  EXPECT_FALSE(fleet_->GetNode("node-a")->has_drain());
  EXPECT_TRUE(fleet_->DrainingNodes().empty());
  // A Hello that says it drains (an agent restarted mid-drain) drains at once.
  RecordingSession again;
  auto hello = MakeHello("node-a", 1);
  *hello.mutable_drain() = st.drain();
  ASSERT_TRUE(fleet_->OnHello(hello, &again).ok());
  EXPECT_EQ(fleet_->DrainingNodes(), std::vector<std::string>{"node-a"});
  // A report without the drain ends it.
  ASSERT_TRUE(fleet_->OnStatus("node-a", dcufleet::v1::NodeStatus(), &again).ok());
  EXPECT_TRUE(fleet_->DrainingNodes().empty());
  EXPECT_FALSE(fleet_->GetNode("node-a")->has_drain());
}

// A person's cordon (dcuctl cordon / drain) outlives what the agent says:
// a report without a drain, a Hello after a reconnect, and a controller
// restart (loaded from the store). A drained node is among DrainingNodes, so
// its replicas are moved; uncordon ends both.
TEST_F(FleetStateTest, APersonsCordonOutlivesReportsReconnectsAndRestarts) {
  RecordingSession s;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &s).ok());
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-b", 1), &s).ok());
  dcufleet::v1::NodeCordon cordon;
  cordon.set_reason("firmware update");
  cordon.set_since_ms(1234);
  auto v = fleet_->SetCordon("node-a", cordon);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->cordon().reason(), "firmware update");
  EXPECT_TRUE(fleet_->DrainingNodes().empty()) << "a cordon alone moves nothing";
  // Drained after the cordon, with no reason given: the cordon's reason
  // and time stay.
  dcufleet::v1::NodeCordon drain;
  drain.set_drain(true);
  drain.set_since_ms(9999);
  auto drained = fleet_->SetCordon("node-a", drain);
  ASSERT_TRUE(drained.ok()) << drained.status();
  EXPECT_EQ(drained->cordon().reason(), "firmware update");
  EXPECT_EQ(drained->cordon().since_ms(), 1234);
  EXPECT_EQ(fleet_->DrainingNodes(), std::vector<std::string>{"node-a"});
  // The agent reports (no drain of its own) and reconnects: still drained.
  ASSERT_TRUE(fleet_->OnStatus("node-a", dcufleet::v1::NodeStatus(), &s).ok());
  EXPECT_TRUE(fleet_->GetNode("node-a")->cordon().drain());
  RecordingSession again;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &again).ok());
  EXPECT_TRUE(fleet_->GetNode("node-a")->has_cordon());
  EXPECT_EQ(fleet_->DrainingNodes(), std::vector<std::string>{"node-a"});
  // A restarted controller loads it.
  FleetState restarted(store_.get(), store_.get(), &clock_, opts_);
  ASSERT_TRUE(restarted.Load().ok());
  EXPECT_EQ(restarted.GetNode("node-a")->cordon().reason(), "firmware update");
  EXPECT_FALSE(restarted.GetNode("node-b")->has_cordon());
  EXPECT_EQ(restarted.DrainingNodes(), std::vector<std::string>{"node-a"});
  // Uncordon: schedulable, not draining, and said in events.
  ASSERT_TRUE(fleet_->SetCordon("node-a", std::nullopt).ok());
  EXPECT_FALSE(fleet_->GetNode("node-a")->has_cordon());
  EXPECT_TRUE(fleet_->DrainingNodes().empty());
  auto events = store_->ListEvents("node", "node-a", 0);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> reasons;
  for (const auto& e : *events) {
    if (e.reason == "Cordoned" || e.reason == "Draining" || e.reason == "Uncordoned") reasons.push_back(e.reason);
  }
  EXPECT_EQ(reasons, (std::vector<std::string>{"Cordoned", "Draining", "Uncordoned"}));
  EXPECT_EQ(fleet_->SetCordon("nowhere", cordon).status().code(), absl::StatusCode::kNotFound);
}

// Issue 20: every ended job would leave its Lost node behind for good; a
// node inside a job is forgotten forget_job_nodes_after after it went Lost
// (row, view, an event saying so), a node outside any job never is, and a
// controller restarted meanwhile counts from its start.
TEST_F(FleetStateTest, AJobsNodeIsForgottenAWhileAfterItWentLost) {
  opts_.forget_job_nodes_after = absl::Minutes(10);
  fleet_ = std::make_unique<FleetState>(store_.get(), store_.get(), &clock_, opts_);
  RecordingSession job_session, plain_session;
  auto job_hello = MakeHello("hpc-12", 2);
  job_hello.mutable_inventory()->mutable_allocation()->set_scheduler("slurm");
  job_hello.mutable_inventory()->mutable_allocation()->set_job_id("12");
  ASSERT_TRUE(fleet_->OnHello(job_hello, &job_session).ok());
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-b", 1), &plain_session).ok());
  fleet_->OnAllocationEnded("12", "slurm job '12' ended (CANCELLED)");
  fleet_->OnDisconnect("hpc-12", &job_session);
  fleet_->OnDisconnect("node-b", &plain_session);
  clock_.Advance(absl::Seconds(61));
  fleet_->Tick();
  EXPECT_EQ(StateOf("hpc-12"), dcufleet::v1::NODE_LOST);
  EXPECT_EQ(StateOf("node-b"), dcufleet::v1::NODE_LOST);

  // Not yet ten minutes after it went Lost: kept, and a restart starts its
  // count again.
  clock_.Advance(absl::Minutes(8));
  fleet_->Tick();
  ASSERT_TRUE(fleet_->GetNode("hpc-12").has_value());
  fleet_ = std::make_unique<FleetState>(store_.get(), store_.get(), &clock_, opts_);
  ASSERT_TRUE(fleet_->Load().ok());
  clock_.Advance(absl::Minutes(9));
  fleet_->Tick();
  ASSERT_TRUE(fleet_->GetNode("hpc-12").has_value()) << "counted from the restart";
  clock_.Advance(absl::Minutes(1));
  fleet_->Tick();
  EXPECT_FALSE(fleet_->GetNode("hpc-12").has_value());
  ASSERT_TRUE(fleet_->GetNode("node-b").has_value()) << "not a job's node: kept until it comes back";
  auto rows = store_->ListNodes();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].name, "node-b");
  auto events = store_->ListEvents("node", "hpc-12", 0);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->back().reason, "Forgotten");
  EXPECT_THAT(events->back().message, ::testing::HasSubstr("inside slurm job '12'"));
  EXPECT_THAT(events->back().message, ::testing::HasSubstr("ended (CANCELLED)"));

  // Its agent (or a new job's under that name) registers anew.
  RecordingSession back;
  ASSERT_TRUE(fleet_->OnHello(job_hello, &back).ok());
  EXPECT_EQ(StateOf("hpc-12"), dcufleet::v1::NODE_READY);
  EXPECT_EQ(store_->ListNodes()->size(), 2u);
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

dcufleet::v1::InstanceEvent EventFor(const std::string& id) {
  dcufleet::v1::InstanceEvent ev;
  ev.mutable_status()->set_instance_id(id);
  ev.mutable_status()->set_phase(dcufleet::v1::INSTANCE_READY);
  return ev;
}

// Counts what wakes the reconciler.
struct CountingListener : FleetListener {
  void OnNodeConnected(const std::string&) override {}
  void OnFleetChanged() override { ++changed; }
  int changed = 0;
};

TEST_F(FleetStateTest, EventsForInstancesTheNodeDoesNotRunAreDroppedAndCounted) {
  RecordingSession s;
  CountingListener listener;
  fleet_->SetListener(&listener);
  auto hello = MakeHello("node-a", 1);
  hello.add_instances()->set_instance_id("mine-1");
  ASSERT_TRUE(fleet_->OnHello(hello, &s).ok());
  const int after_hello = listener.changed;
  ASSERT_TRUE(fleet_->OnInstanceEvent("node-a", EventFor("mine-1"), &s).ok());
  EXPECT_EQ(listener.changed, after_hello + 1) << "an applied event wakes the reconciler";
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(fleet_->OnInstanceEvent("node-a", EventFor("forged-" + std::to_string(i)), &s).ok());
  }
  // Dropped events change nothing and wake nothing (a node cannot keep the
  // reconciler running passes with them).
  EXPECT_EQ(listener.changed, after_hello + 1);
  fleet_->SetListener(nullptr);
  auto v = fleet_->GetNode("node-a");
  ASSERT_EQ(v->instances_size(), 1) << "forged instances were added to the node's view";
  EXPECT_EQ(v->drops().events_unknown_instance(), 10);
  EXPECT_THAT(v->drops().last_reason(), ::testing::HasSubstr("forged-9"));
}

TEST_F(FleetStateTest, AFloodIsRateLimitedThenDisconnectedAndHelloRefusedForAWhile) {
  RecordingSession s;
  auto hello = MakeHello("node-a", 1);
  hello.add_instances()->set_instance_id("mine-1");
  ASSERT_TRUE(fleet_->OnHello(hello, &s).ok());
  // A burst's worth is taken, then events are dropped and counted (the
  // clock stands still: no refill).
  const int burst = static_cast<int>(FleetState::kInstanceEventBurst);
  for (int i = 0; i < burst; ++i) {
    ASSERT_TRUE(fleet_->OnInstanceEvent("node-a", EventFor("mine-1"), &s).ok()) << i;
  }
  EXPECT_EQ(fleet_->GetNode("node-a")->drops().events_rate_limited(), 0);
  absl::Status last;
  int sent = 0;
  while (last.ok() && sent < 10 * burst) {
    last = fleet_->OnInstanceEvent("node-a", EventFor("mine-1"), &s);
    ++sent;
  }
  // Another burst's worth dropped with no time passing: the stream is refused.
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_EQ(sent, burst + 1);
  EXPECT_EQ(fleet_->GetNode("node-a")->drops().events_rate_limited(), burst + 1);
  fleet_->OnDisconnect("node-a", &s);
  RecordingSession s2;
  auto again = fleet_->OnHello(hello, &s2);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(again.status().message()), ::testing::HasSubstr("may reconnect in"));
  clock_.Advance(FleetState::kFloodPenalty);
  EXPECT_TRUE(fleet_->OnHello(hello, &s2).ok());
  // Refilled at the node's rate: a normal pace is accepted again.
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(fleet_->OnInstanceEvent("node-a", EventFor("mine-1"), &s2).ok());
}

TEST_F(FleetStateTest, AModestOverrunIsOnlyDropped) {
  RecordingSession s;
  auto hello = MakeHello("node-a", 1);
  hello.add_instances()->set_instance_id("mine-1");
  ASSERT_TRUE(fleet_->OnHello(hello, &s).ok());
  // 90 events a second for 20 s against a budget of 50/s with a burst of
  // 200: the excess is dropped, the budget still accepted, the stream kept.
  int accepted_before = 0;
  for (int sec = 0; sec < 20; ++sec) {
    for (int i = 0; i < 90; ++i) {
      clock_.Advance(absl::Microseconds(1000000 / 90));
      ASSERT_TRUE(fleet_->OnInstanceEvent("node-a", EventFor("mine-1"), &s).ok()) << sec;
    }
    if (sec == 9) accepted_before = 900 - static_cast<int>(fleet_->GetNode("node-a")->drops().events_rate_limited());
  }
  const int64_t dropped = fleet_->GetNode("node-a")->drops().events_rate_limited();
  EXPECT_GT(dropped, 0);
  const int accepted = 1800 - static_cast<int>(dropped);
  // About 50/s were taken in the last ten seconds.
  EXPECT_NEAR(accepted - accepted_before, 500, 20);
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_READY);
}


// --- issue 22: reports that carry only the inventory's digest ---

dcufleet::v1::NodeInventory Inventory(int devices, int64_t free_gib) {
  dcufleet::v1::NodeInventory inv;
  inv.set_hostname("host-a");
  for (int i = 0; i < devices; ++i) {
    auto* d = inv.add_devices();
    d->set_index(i);
    d->set_arch("gfx928");
    d->mutable_total()->set_bytes(64LL << 30);
    d->mutable_device_free()->set_bytes(free_gib << 30);
    d->mutable_schedulable_free()->set_bytes(free_gib << 30);
  }
  return inv;
}

dcufleet::v1::Hello HelloWith(const dcufleet::v1::NodeInventory& inv, bool digest) {
  dcufleet::v1::Hello h;
  h.set_node_name("node-a");
  h.set_agent_version("0.2.0");
  *h.mutable_inventory() = inv;
  if (digest) h.set_inventory_digest(common::InventoryDigest(inv));
  return h;
}

dcufleet::v1::NodeStatus DeltaOf(const dcufleet::v1::NodeInventory& inv) {
  dcufleet::v1::NodeStatus st;
  *st.mutable_inventory() = inv;
  st.set_inventory_digest(common::InventoryDigest(inv));
  common::MakeDelta(&st);
  return st;
}

int InventoryRequests(const RecordingSession& s) {
  int n = 0;
  for (const auto& m : s.sent) n += m.has_inventory_request();
  return n;
}

TEST_F(FleetStateTest, ADeltaMovesTheHeldInventorysFiguresOnly) {
  RecordingSession s;
  const auto inv = Inventory(8, 60);
  auto w = fleet_->OnHello(HelloWith(inv, true), &s);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->accepts_inventory_digest());
  EXPECT_TRUE(w->accepts_compact_figures());

  auto now = inv;
  now.mutable_devices(3)->mutable_device_free()->set_bytes(5LL << 30);
  now.mutable_devices(3)->mutable_schedulable_free()->set_bytes(5LL << 30);
  now.set_collected_at_ms(777);
  dcufleet::v1::NodeStatus delta = DeltaOf(now);
  ASSERT_FALSE(delta.has_inventory());
  ASSERT_TRUE(fleet_->OnStatus("node-a", delta, &s).ok());

  auto view = fleet_->GetNode("node-a");
  ASSERT_EQ(view->inventory().devices_size(), 8);
  EXPECT_EQ(view->inventory().devices(3).schedulable_free().bytes(), 5LL << 30);
  EXPECT_EQ(view->inventory().devices(2).schedulable_free().bytes(), 60LL << 30);
  EXPECT_EQ(view->inventory().devices(3).arch(), "gfx928");
  EXPECT_EQ(view->inventory().hostname(), "host-a");
  EXPECT_EQ(view->inventory().collected_at_ms(), 777);
  EXPECT_EQ(view->inventory().SerializeAsString(), now.SerializeAsString());
  EXPECT_EQ(view->reports().full(), 1);
  EXPECT_EQ(view->reports().delta(), 1);
  EXPECT_EQ(InventoryRequests(s), 0);
  // A reader's snapshot is not changed under it by the next delta.
  auto held = fleet_->Snapshot();
  now.mutable_devices(3)->mutable_schedulable_free()->set_bytes(1LL << 30);
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(now), &s).ok());
  EXPECT_EQ(held[0]->inventory().devices(3).schedulable_free().bytes(), 5LL << 30);
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().devices(3).schedulable_free().bytes(), 1LL << 30);
  held.clear();

  // With no reader the view is changed in place (issue 22: no copy of the
  // inventory per report): the same object, a new revision, which is how
  // the reconciler's cache tells a changed node.
  auto v1 = fleet_->SnapshotVersioned();
  ASSERT_EQ(v1.size(), 1u);
  const dcufleet::v1::NodeView* object = v1[0].view.get();
  const uint64_t rev1 = v1[0].revision;
  v1.clear();
  now.mutable_devices(3)->mutable_schedulable_free()->set_bytes(2LL << 30);
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(now), &s).ok());
  auto v2 = fleet_->SnapshotVersioned();
  EXPECT_EQ(v2[0].view.get(), object) << "copied although nobody held the view";
  EXPECT_GT(v2[0].revision, rev1);
  EXPECT_EQ(v2[0].view->inventory().devices(3).schedulable_free().bytes(), 2LL << 30);
  EXPECT_EQ(fleet_->GetNode("node-a")->reports().delta(), 3);
  // Held: the next report publishes a new object with a newer revision.
  now.mutable_devices(3)->mutable_schedulable_free()->set_bytes(3LL << 30);
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(now), &s).ok());
  auto v3 = fleet_->SnapshotVersioned();
  EXPECT_NE(v3[0].view.get(), v2[0].view.get());
  EXPECT_GT(v3[0].revision, v2[0].revision);
  EXPECT_EQ(v2[0].view->inventory().devices(3).schedulable_free().bytes(), 2LL << 30);
}

TEST_F(FleetStateTest, AnUnknownDigestAsksForTheFullInventoryAtMostOnceASecond) {
  RecordingSession s;
  const auto inv = Inventory(8, 60);
  ASSERT_TRUE(fleet_->OnHello(HelloWith(inv, true), &s).ok());
  // A device went away; the delta names the new digest the controller has
  // never seen.
  auto fewer = Inventory(7, 50);
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(fewer), &s).ok());
  EXPECT_EQ(InventoryRequests(s), 1);
  ASSERT_TRUE(s.sent.back().has_inventory_request());
  EXPECT_THAT(s.sent.back().inventory_request().reason(), ::testing::HasSubstr("digest"));
  // Nothing of the unmatched delta is applied; liveness is.
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().devices_size(), 8);
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().devices(0).schedulable_free().bytes(), 60LL << 30);
  clock_.Advance(absl::Milliseconds(300));
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(fewer), &s).ok());
  EXPECT_EQ(InventoryRequests(s), 1);
  EXPECT_EQ(fleet_->GetNode("node-a")->last_seen_ms(), common::ToUnixMillis(clock_.Now()));
  clock_.Advance(FleetState::kInventoryRequestEvery);
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(fewer), &s).ok());
  EXPECT_EQ(InventoryRequests(s), 2);

  // The full report answers it; deltas against it apply again.
  dcufleet::v1::NodeStatus full;
  *full.mutable_inventory() = fewer;
  full.set_inventory_digest(common::InventoryDigest(fewer));
  ASSERT_TRUE(fleet_->OnStatus("node-a", full, &s).ok());
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().devices_size(), 7);
  auto moved = fewer;
  moved.mutable_devices(6)->mutable_schedulable_free()->set_bytes(2LL << 30);
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(moved), &s).ok());
  EXPECT_EQ(InventoryRequests(s), 2);
  auto view = fleet_->GetNode("node-a");
  EXPECT_EQ(view->inventory().devices(6).schedulable_free().bytes(), 2LL << 30);
  EXPECT_EQ(view->reports().full(), 2);
  EXPECT_EQ(view->reports().delta(), 4);
  EXPECT_EQ(view->reports().inventory_requests(), 2);
}

TEST_F(FleetStateTest, ADeltaNamingADeviceNotHeldAsksForTheInventory) {
  RecordingSession s;
  const auto inv = Inventory(2, 60);
  ASSERT_TRUE(fleet_->OnHello(HelloWith(inv, true), &s).ok());
  dcufleet::v1::NodeStatus delta = DeltaOf(inv);
  delta.mutable_device_memory(1)->set_index(5);
  ASSERT_TRUE(fleet_->OnStatus("node-a", delta, &s).ok());
  ASSERT_EQ(InventoryRequests(s), 1);
  EXPECT_THAT(s.sent.back().inventory_request().reason(),
              ::testing::HasSubstr("status.device_memory[1].index: device 5"));
}

// The compact form (DeviceFigures): applied in place and on a held view's
// copy alike, with the sources the controller holds kept; one that keeps a
// source the controller never had asks for the full inventory.
TEST_F(FleetStateTest, CompactFiguresMoveTheFiguresAndKeepTheSources) {
  RecordingSession s;
  auto inv = Inventory(8, 60);
  for (auto& d : *inv.mutable_devices()) d.mutable_schedulable_free()->set_source("min(smi,hip)");
  ASSERT_TRUE(fleet_->OnHello(HelloWith(inv, true), &s).ok());
  common::CompactFiguresWriter writer;
  writer.Sent(inv);
  auto compact = [&](const dcufleet::v1::NodeInventory& now) {
    dcufleet::v1::NodeStatus st;
    *st.mutable_inventory() = now;
    st.set_inventory_digest(common::InventoryDigest(now));
    writer.MakeCompactDelta(&st);
    return st;
  };
  auto now = inv;
  now.mutable_devices(3)->mutable_schedulable_free()->set_bytes(5LL << 30);
  now.set_collected_at_ms(777);
  dcufleet::v1::NodeStatus st = compact(now);
  ASSERT_EQ(st.figures().index_size(), 8);
  EXPECT_EQ(st.figures().sources_size(), 0);
  ASSERT_TRUE(fleet_->OnStatus("node-a", st, &s).ok());  // in place: nobody holds the view
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().SerializeAsString(), now.SerializeAsString());

  auto held = fleet_->Snapshot();  // the copying path
  now.mutable_devices(3)->mutable_schedulable_free()->set_bytes(1LL << 30);
  now.mutable_devices(4)->mutable_schedulable_free()->set_source("hip");
  ASSERT_TRUE(fleet_->OnStatus("node-a", compact(now), &s).ok());
  auto view = fleet_->GetNode("node-a");
  EXPECT_EQ(view->inventory().SerializeAsString(), now.SerializeAsString());
  EXPECT_EQ(held[0]->inventory().devices(3).schedulable_free().bytes(), 5LL << 30);
  EXPECT_EQ(view->reports().delta(), 2);
  EXPECT_EQ(InventoryRequests(s), 0);
  held.clear();

  // The agent believes the controller has a holders_vram reading (it sent
  // it in a report the controller never applied).
  auto unseen = now;
  unseen.mutable_devices(0)->mutable_holders_vram()->set_bytes(1);
  unseen.mutable_devices(0)->mutable_holders_vram()->set_source("kfd");
  writer.Sent(unseen);
  ASSERT_TRUE(fleet_->OnStatus("node-a", compact(unseen), &s).ok());
  ASSERT_EQ(InventoryRequests(s), 1);
  EXPECT_THAT(s.sent.back().inventory_request().reason(), ::testing::HasSubstr("holders_vram of device 0"));
  EXPECT_FALSE(fleet_->GetNode("node-a")->inventory().devices(0).has_holders_vram());
}

// A report that refreshes only times keeps the node's revision (a reconcile
// pass keyed on it rebuilds nothing), in place and on a held view's copy
// alike, and still shows its times; one that moves a figure or an
// instance gives a new one.
TEST_F(FleetStateTest, ARevisionChangesWithWhatReadersActOnNotWithTimes) {
  RecordingSession s;
  auto inv = Inventory(8, 60);
  ASSERT_TRUE(fleet_->OnHello(HelloWith(inv, true), &s).ok());
  auto revision = [&] { return fleet_->SnapshotVersioned()[0].revision; };
  const uint64_t r0 = revision();

  auto now = inv;
  now.set_collected_at_ms(5000);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(now), &s).ok());  // in place
  EXPECT_EQ(revision(), r0);
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().collected_at_ms(), 5000);
  EXPECT_EQ(fleet_->GetNode("node-a")->last_seen_ms(), common::ToUnixMillis(clock_.Now()));

  // Held by a reader: the report is kept, not copied into a new view. The
  // held view is untouched; GetNode and ListNodes show the report's times
  // at once, a snapshot once nobody holds the view (Tick).
  auto held = fleet_->Snapshot();
  now.set_collected_at_ms(6000);
  clock_.Advance(absl::Seconds(1));
  const int64_t at_6000 = common::ToUnixMillis(clock_.Now());
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(now), &s).ok());
  EXPECT_EQ(revision(), r0);
  EXPECT_EQ(fleet_->Snapshot()[0].get(), held[0].get()) << "copied for a report of times only";
  EXPECT_EQ(held[0]->inventory().collected_at_ms(), 5000);
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().collected_at_ms(), 6000);
  EXPECT_EQ(fleet_->GetNode("node-a")->last_seen_ms(), at_6000);
  EXPECT_EQ(fleet_->ListNodes()[0].inventory().collected_at_ms(), 6000);
  EXPECT_EQ(fleet_->GetNode("node-a")->reports().delta(), 2);
  fleet_->Tick();  // still held: kept
  EXPECT_EQ(held[0]->inventory().collected_at_ms(), 5000);
  held.clear();
  fleet_->Tick();
  EXPECT_EQ(fleet_->Snapshot()[0]->inventory().collected_at_ms(), 6000);
  EXPECT_EQ(fleet_->Snapshot()[0]->last_seen_ms(), at_6000);
  EXPECT_EQ(revision(), r0);

  held = fleet_->Snapshot();
  now.set_collected_at_ms(6500);
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(now), &s).ok());  // kept
  now.set_collected_at_ms(7000);
  now.mutable_devices(5)->mutable_schedulable_free()->set_bytes(7LL << 30);  // still held: copied
  ASSERT_TRUE(fleet_->OnStatus("node-a", DeltaOf(now), &s).ok());
  const uint64_t r1 = revision();
  EXPECT_GT(r1, r0);
  EXPECT_NE(fleet_->Snapshot()[0].get(), held[0].get());
  EXPECT_EQ(fleet_->Snapshot()[0]->inventory().collected_at_ms(), 7000);
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().SerializeAsString(), now.SerializeAsString());
  held.clear();

  dcufleet::v1::NodeStatus with_instance = DeltaOf(now);  // in place
  with_instance.add_instances()->set_instance_id("i-1");
  ASSERT_TRUE(fleet_->OnStatus("node-a", with_instance, &s).ok());
  EXPECT_GT(revision(), r1);
}

// A kept report is older than an instance event that follows it: the
// event's phase wins, and the report's times are not lost.
TEST_F(FleetStateTest, AnInstanceEventAfterAKeptReportWins) {
  RecordingSession s;
  const auto inv = Inventory(2, 60);
  ASSERT_TRUE(fleet_->OnHello(HelloWith(inv, true), &s).ok());
  auto now = inv;
  dcufleet::v1::NodeStatus first = DeltaOf(now);
  auto* i = first.add_instances();
  i->set_instance_id("i-1");
  i->set_phase(dcufleet::v1::INSTANCE_LOADING);
  ASSERT_TRUE(fleet_->OnStatus("node-a", first, &s).ok());

  auto held = fleet_->Snapshot();
  now.set_collected_at_ms(4242);
  dcufleet::v1::NodeStatus again = DeltaOf(now);
  *again.add_instances() = first.instances(0);
  again.mutable_instances(0)->set_updated_at_ms(99);  // times only
  ASSERT_TRUE(fleet_->OnStatus("node-a", again, &s).ok());
  ASSERT_EQ(fleet_->Snapshot()[0].get(), held[0].get()) << "the report was not kept";

  dcufleet::v1::InstanceEvent ready;
  *ready.mutable_status() = first.instances(0);
  ready.mutable_status()->set_phase(dcufleet::v1::INSTANCE_READY);
  ASSERT_TRUE(fleet_->OnInstanceEvent("node-a", ready, &s).ok());
  auto view = fleet_->Snapshot()[0];
  ASSERT_EQ(view->instances_size(), 1);
  EXPECT_EQ(view->instances(0).phase(), dcufleet::v1::INSTANCE_READY);
  EXPECT_EQ(view->inventory().collected_at_ms(), 4242);
  EXPECT_EQ(held[0]->instances(0).phase(), dcufleet::v1::INSTANCE_LOADING);
}

// An agent from before issue 22: no digest, the inventory in every report.
TEST_F(FleetStateTest, AnOlderAgentsFullReportsStillWork) {
  RecordingSession s;
  ASSERT_TRUE(fleet_->OnHello(HelloWith(Inventory(8, 60), false), &s).ok());
  dcufleet::v1::NodeStatus full;
  *full.mutable_inventory() = Inventory(4, 10);
  ASSERT_TRUE(fleet_->OnStatus("node-a", full, &s).ok());
  auto view = fleet_->GetNode("node-a");
  EXPECT_EQ(view->inventory().devices_size(), 4);
  EXPECT_EQ(view->inventory().devices(0).schedulable_free().bytes(), 10LL << 30);
  EXPECT_EQ(view->reports().full(), 2);
  EXPECT_EQ(view->reports().delta(), 0);
  // A report without inventory or digest (as ever) keeps the inventory.
  ASSERT_TRUE(fleet_->OnStatus("node-a", dcufleet::v1::NodeStatus(), &s).ok());
  EXPECT_EQ(fleet_->GetNode("node-a")->inventory().devices_size(), 4);
  EXPECT_EQ(InventoryRequests(s), 0);
}

// --inventory-delta=false: the controller behaves as one from before issue
// 22: Welcome does not accept digests, and a digest is neither kept nor
// acted on.
TEST_F(FleetStateTest, AControllerThatDoesNotAcceptDigestsSaysSoAndNeverAsks) {
  FleetState::Options o = opts_;
  o.accept_inventory_digest = false;
  FleetState old(store_.get(), store_.get(), &clock_, o);
  RecordingSession s;
  const auto inv = Inventory(8, 60);
  auto w = old.OnHello(HelloWith(inv, true), &s);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->accepts_inventory_digest());
  EXPECT_FALSE(w->accepts_compact_figures());
  ASSERT_TRUE(old.OnStatus("node-a", DeltaOf(Inventory(8, 1)), &s).ok());
  EXPECT_EQ(InventoryRequests(s), 0);
  EXPECT_EQ(old.GetNode("node-a")->inventory().devices(0).schedulable_free().bytes(), 60LL << 30);
  // Received (and counted), not taken.
  EXPECT_EQ(old.GetNode("node-a")->reports().delta(), 1);
}

// A session whose sent messages the test reads while another thread sends.
class LockedSession : public NodeSession {
 public:
  bool Send(dcufleet::v1::ControllerMessage m) override {
    absl::MutexLock lock(&mu_);
    sent_.push_back(std::move(m));
    return true;
  }
  std::string Peer() const override { return "test"; }
  // The id of the first Command sent, once there is one.
  std::string CommandId() {
    absl::MutexLock lock(&mu_);
    auto has_command = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const auto& m : sent_) {
        if (m.has_command()) return true;
      }
      return false;
    };
    mu_.Await(absl::Condition(&has_command));
    for (const auto& m : sent_) {
      if (m.has_command()) return m.command().command_id();
    }
    return "";
  }

 private:
  absl::Mutex mu_;
  std::vector<dcufleet::v1::ControllerMessage> sent_ ABSL_GUARDED_BY(mu_);
};

// A node answering a command sent to another node is refused, and the
// command still gets its own node's answer (command ids are guessable in
// principle: NewId is 48 bits of a generator that is not cryptographic).
TEST_F(FleetStateTest, OnlyTheNodeACommandWasSentToMayAnswerIt) {
  LockedSession a, b;
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", 1), &a).ok());
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-b", 1), &b).ok());
  absl::StatusOr<dcufleet::v1::CommandResult> answered;
  std::thread caller([&] { answered = fleet_->RunCommand("node-a", dcufleet::v1::Command(), absl::Seconds(30)); });
  const std::string id = a.CommandId();
  dcufleet::v1::CommandResult forged;
  forged.set_command_id(id);
  forged.set_ok(true);
  forged.set_message("from node-b");
  absl::Status refused = fleet_->OnCommandResult("node-b", forged);
  EXPECT_TRUE(absl::IsPermissionDenied(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("not sent to it"));
  dcufleet::v1::CommandResult real = forged;
  real.set_message("from node-a");
  EXPECT_TRUE(fleet_->OnCommandResult("node-a", real).ok());
  caller.join();
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(answered->message(), "from node-a");
  // A late answer (nothing waits for the id any more) is dropped, not refused.
  EXPECT_TRUE(fleet_->OnCommandResult("node-a", real).ok());
}

}  // namespace
}  // namespace dcu::controller
