#include "controller/core/deploy_controller.h"

#include <algorithm>
#include <map>
#include <set>
#include <optional>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "controller/core/replica_set.h"
#include "controller/core/serving_view.h"
#include "controller/store/sqlite_deployment_store.h"
#include "controller/store/sqlite_store.h"
#include "modelkit/verdict.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_batch_scheduler.h"
#include "tests/testing/fake_knowledge.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;
using dcufleet::v1::ControllerMessage;

class RecordingSession : public NodeSession {
 public:
  bool Send(ControllerMessage m) override {
    // What the agent reads: the message as it goes on the wire (an
    // Assignment is encoded ahead, assignment_wire.h).
    ControllerMessage wire;
    EXPECT_TRUE(wire.ParseFromString(m.SerializeAsString()));
    if (wire.has_assignment()) assignments.push_back(wire.assignment());
    return true;
  }
  std::string Peer() const override { return "test"; }
  std::vector<dcufleet::v1::Assignment> assignments;
  const dcufleet::v1::Assignment& last() const { return assignments.back(); }
};

dcufleet::v1::Hello MakeHello(const std::string& name, const std::string& arch, int devices,
                              int64_t total, int64_t free) {
  dcufleet::v1::Hello h;
  h.set_node_name(name);
  for (int i = 0; i < devices; ++i) {
    auto* d = h.mutable_inventory()->add_devices();
    d->set_index(i);
    d->set_arch(arch);
    d->set_product_name(arch == "gfx928" ? "K100_AI" : "Z100");
    d->mutable_total()->set_bytes(total);
    d->mutable_total()->set_valid(true);
    d->mutable_schedulable_free()->set_bytes(free);
    d->mutable_schedulable_free()->set_valid(true);
    d->mutable_schedulable_free()->set_source("hip:hipMemGetInfo");
  }
  return h;
}

constexpr int64_t kGiB = 1LL << 30;

class DeployControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqliteStore::Open(":memory:"));
    deploy_store_ = std::make_unique<SqliteDeploymentStore>(store_->database());
    fleet_ = std::make_unique<FleetState>(store_.get(), store_.get(), &clock_, FleetState::Options());
    knowledge_.stacks = {{"vllm-0.11.0-bare", "bare", "gfx928", "untested", 3},
                         {"vllm-0.9.2-bare", "bare", "gfx928", "works", 1},
                         {"vllm-0.9.2-image", "container", "gfx928", "works", 2},
                         {"vllm-0.18-image", "container", "gfx906", "untested", 4}};
    MakeController();
  }
  // `deployments`: the controller's document store (the fixture's SQLite one
  // unless a test wraps it). A non-zero `interval` lets Start() run the
  // reconcile and writer threads; zero leaves passes to the test.
  // `events`: an event log in place of the store's (a test that holds
  // appends); the test resets controller_ before its log goes.
  void MakeController(DeploymentStore* deployments = nullptr,
                      absl::Duration interval = absl::ZeroDuration(), EventLog* events = nullptr) {
    DeployController::Options o;
    o.interval = interval;
    o.jitter_seed = 42;
    o.serving_drain = absl::Seconds(2);
    if (controller_) fleet_->SetListener(nullptr);
    controller_ = std::make_unique<DeployController>(
        fleet_.get(), &knowledge_, &diagnoser_, deployments ? deployments : deploy_store_.get(),
        events ? events : store_.get(), &clock_, o);
    fleet_->SetListener(controller_.get());
    ASSERT_TRUE(controller_->Load().ok());
  }
  void Connect(const std::string& node, RecordingSession* s, const std::string& arch = "gfx928",
               int devices = 8, int64_t free = 63 * kGiB) {
    ASSERT_TRUE(fleet_->OnHello(MakeHello(node, arch, devices, 64 * kGiB, free), s).ok());
  }
  // The agent reports its instance in `phase` with an optional log tail.
  void Report(const std::string& node, RecordingSession* s, const dcufleet::v1::InstanceSpec& spec,
              dcufleet::v1::InstancePhase phase, std::vector<std::string> tail = {}) {
    dcufleet::v1::InstanceEvent ev;
    ev.mutable_status()->set_instance_id(spec.instance_id());
    ev.mutable_status()->set_phase(phase);
    ev.mutable_status()->set_port(spec.port());
    for (auto& l : tail) ev.mutable_status()->add_log_tail(l);
    if (phase == dcufleet::v1::INSTANCE_FAILED) ev.mutable_status()->set_exit_code(1);
    ASSERT_TRUE(fleet_->OnInstanceEvent(node, ev, s).ok());
  }
  dcufleet::v1::Deployment Get(const std::string& n) { return *controller_->Get(n); }
  // node-a connects, the default spec is deployed and its instance reports
  // Ready; returns that instance.
  dcufleet::v1::InstanceSpec ServingOnNodeA(RecordingSession* a) {
    Connect("node-a", a);
    EXPECT_TRUE(controller_->Deploy(Spec(), false).ok());
    controller_->ReconcileOnceForTest();
    auto inst = a->last().instances(0);
    Report("node-a", a, inst, dcufleet::v1::INSTANCE_READY);
    controller_->ReconcileOnceForTest();
    return inst;
  }
  std::vector<std::string> EventReasons(const std::string& n) {
    std::vector<std::string> out;
    // Held: a range-for over *temporary() reads a destroyed StatusOr (C++20).
    auto events = store_->ListEvents("deployment", n, 0);
    for (const auto& e : *events) out.push_back(e.reason);
    return out;
  }
  std::vector<std::string> EventMessages(const std::string& n) {
    std::vector<std::string> out;
    auto events = store_->ListEvents("deployment", n, 0);
    for (const auto& e : *events) out.push_back(e.message);
    return out;
  }
  // The instances a node is meant to run, found by walking every stored
  // document (the active attempt and orphans of each deployment not
  // deleted): the oracle for the controller's per-node index, which
  // AssignedTo and each pass's assignments read.
  std::multiset<std::string> AssignedByWalk(const std::string& node) {
    std::multiset<std::string> out;
    auto docs = deploy_store_->ListDeployments();
    EXPECT_TRUE(docs.ok());
    if (!docs.ok()) return out;
    for (const auto& d : *docs) {
      // Being removed, or the document a deployment scaled to zero keeps.
      if (d.status().deleted() || d.status().scaled_to_zero()) continue;
      const auto& attempts = d.status().attempts();
      for (int i = 0; i < attempts.size(); ++i) {
        const bool latest_active = i == attempts.size() - 1 && attempts[i].ended_at_ms() == 0;
        if ((latest_active || attempts[i].orphaned()) && attempts[i].placement().node() == node) {
          out.insert(attempts[i].instance_id());
        }
      }
    }
    return out;
  }
  void ExpectAssignedMatchesTheDocuments(std::initializer_list<std::string> nodes) {
    for (const std::string& n : nodes) {
      std::multiset<std::string> indexed;
      for (const auto& spec : controller_->AssignedTo(n)) indexed.insert(spec.instance_id());
      EXPECT_EQ(indexed, AssignedByWalk(n)) << "node " << n;
    }
  }
  dcufleet::v1::DeploymentSpec Spec(int tp = 4) {
    dcufleet::v1::DeploymentSpec s;
    s.set_model("qwen3-32b");
    s.set_tp(tp);
    return s;
  }

  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<SqliteDeploymentStore> deploy_store_;
  std::unique_ptr<FleetState> fleet_;
  testing::FakeKnowledge knowledge_;
  testing::FakeDiagnoser diagnoser_;
  std::unique_ptr<DeployController> controller_;
};

// Two agents at one address (two Slurm allocations on one host, a loopback
// test fleet) share one port space: an instance's port on one node is not
// given on the other. Nodes at different addresses each start at the base.
TEST_F(DeployControllerTest, NodesAtOneAddressShareTheirPorts) {
  auto connect_at = [&](const std::string& node, RecordingSession* s, const std::string& address) {
    auto hello = MakeHello(node, "gfx928", 8, 64 * kGiB, 63 * kGiB);
    hello.set_advertise_address(address);
    ASSERT_TRUE(fleet_->OnHello(hello, s).ok());
  };
  RecordingSession a, b, c;
  connect_at("node-a", &a, "10.0.0.5");
  connect_at("node-b", &b, "10.0.0.5");
  connect_at("node-c", &c, "10.0.0.6");
  std::map<std::string, int> port_on;
  for (const char* name : {"one", "two", "three"}) {
    auto spec = Spec(8);
    spec.set_name(name);
    ASSERT_TRUE(controller_->Deploy(spec, false).ok());
    controller_->ReconcileOnceForTest();
    const auto placement = Get(name).status().attempts(0).placement();
    port_on[placement.node()] = placement.port();
  }
  ASSERT_EQ(port_on.size(), 3u) << "one TP=8 deployment per node";
  EXPECT_NE(port_on["node-a"], port_on["node-b"]);
  EXPECT_EQ(port_on["node-c"], std::min(port_on["node-a"], port_on["node-b"]));
}

TEST_F(DeployControllerTest, PicksTheVerifiedBarePlanAndAssignsIt) {
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_LAUNCHING);
  ASSERT_EQ(d.status().attempts_size(), 1);
  EXPECT_EQ(d.status().attempts(0).stack_id(), "vllm-0.9.2-bare");
  EXPECT_THAT(d.status().attempts(0).placement().device_indices(), ::testing::ElementsAre(0, 1, 2, 3));
  ASSERT_FALSE(a.assignments.empty());
  ASSERT_EQ(a.last().instances_size(), 1);
  EXPECT_EQ(a.last().instances(0).instance_id(), d.status().attempts(0).instance_id());
  // Plans are ordered: verified bare, verified container, untested bare.
  ASSERT_EQ(d.status().plans_size(), 3);
  EXPECT_EQ(d.status().plans(0).stack_id(), "vllm-0.9.2-bare");
  EXPECT_EQ(d.status().plans(2).stack_id(), "vllm-0.11.0-bare");

  Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  EXPECT_EQ(d.status().endpoint(), "node-a:8000");
  ASSERT_EQ(knowledge_.outcomes.size(), 1u);
  EXPECT_TRUE(knowledge_.outcomes[0].ready);
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::ElementsAre("Created", "Scheduled", "Ready"));
}

// An event log whose AppendEvents can be held while a pass is in it.
class HeldEventLog : public EventLog {
 public:
  explicit HeldEventLog(EventLog* inner) : inner_(inner) {}
  // One event of the reason given to HoldReason waits as a held batch does.
  absl::Status AppendEvent(const Event& e) override {
    absl::MutexLock lock(&mu_);
    if (!hold_reason_.empty() && e.reason == hold_reason_) {
      held_ = true;
      mu_.Await(absl::Condition(+[](std::string* reason) { return reason->empty(); },
                                &hold_reason_));
    }
    return inner_->AppendEvent(e);
  }
  absl::Status AppendEvents(const std::vector<Event>& events) override {
    absl::MutexLock lock(&mu_);
    if (hold_) {
      held_ = true;
      mu_.Await(absl::Condition(+[](bool* hold) { return !*hold; }, &hold_));
    }
    return inner_->AppendEvents(events);
  }
  absl::StatusOr<std::vector<Event>> QueryEvents(const EventQuery& query) override {
    return inner_->QueryEvents(query);
  }
  void Hold() {
    absl::MutexLock lock(&mu_);
    hold_ = true;
  }
  void WaitUntilHeld() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&held_));
  }
  void HoldReason(const std::string& reason) {
    absl::MutexLock lock(&mu_);
    hold_reason_ = reason;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    hold_ = false;
    hold_reason_.clear();
  }

 private:
  EventLog* const inner_;
  absl::Mutex mu_;
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  std::string hold_reason_ ABSL_GUARDED_BY(mu_);
  bool held_ ABSL_GUARDED_BY(mu_) = false;
};

// A controller whose event log a test can hold (HeldEventLog), with
// qwen3-32b deployed and placed on node-a by one pass.
class HeldEventsTest : public DeployControllerTest {
 protected:
  void SetUp() override {
    DeployControllerTest::SetUp();
    events_.emplace(store_.get());
    MakeController(nullptr, absl::ZeroDuration(), &*events_);
    Connect("node-a", &a_);
    ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
    controller_->ReconcileOnceForTest();
  }
  // The controller goes before the log it appends to.
  void TearDown() override {
    fleet_->SetListener(nullptr);
    controller_.reset();
  }
  std::optional<HeldEventLog> events_;
  RecordingSession a_;
};

// A watcher (WatchDeployment, `dcuctl deploy --watch`) reads a new revision
// and then the events: the revision must not be visible before the pass's
// events are in the log, or a watch that stops at Ready never prints the
// events that led to it (seen under load in ScenarioTest.Seed000...).
TEST_F(HeldEventsTest, AWatcherSeesANewRevisionOnlyWithTheEventsOfItsPass) {
  HeldEventLog& events = *events_;
  Report("node-a", &a_, a_.last().instances(0), dcufleet::v1::INSTANCE_READY);
  const int64_t before = Get("qwen3-32b").revision();

  events.Hold();
  std::thread pass([&] { controller_->ReconcileOnceForTest(); });
  events.WaitUntilHeld();
  // The pass has stored and published the Ready document; its events wait.
  auto seen = controller_->WaitForChange("qwen3-32b", before, absl::Milliseconds(50));
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->revision(), before) << "a new revision was visible before its events";
  events.Release();
  pass.join();
  seen = controller_->WaitForChange("qwen3-32b", before, absl::Seconds(5));
  ASSERT_TRUE(seen.has_value());
  EXPECT_GT(seen->revision(), before);
  EXPECT_EQ(seen->status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::ElementsAre("Created", "Scheduled", "Ready"));
}

// A scale's "Scaled" is in the log before any pass's event about the
// replica it added: the scale appends it before it lets go of the order of
// document writes, which the pass needs to store its placement. Before, it
// was appended after, and a pass in between logged "Scheduled replica 1"
// under a deployment still shown with one replica.
TEST_F(HeldEventsTest, AScaleIsLoggedBeforeAnyPassActsOnIt) {
  HeldEventLog& events = *events_;
  events.HoldReason("Scaled");
  absl::StatusOr<dcufleet::v1::ScaleDeploymentResponse> scaled;
  std::thread scale([&] { scaled = controller_->Scale("qwen3-32b", 2); });
  events.WaitUntilHeld();  // replica 1 is stored and in memory; "Scaled" waits
  std::thread pass([&] { controller_->ReconcileOnceForTest(); });
  // Time for a pass that does not wait to place replica 1 and log it.
  absl::SleepFor(absl::Milliseconds(300));
  events.Release();
  scale.join();
  pass.join();
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  controller_->ReconcileOnceForTest();
  ASSERT_EQ(Get("qwen3-32b").replicas_size(), 2);

  auto logged = store_->ListEvents("deployment", "qwen3-32b", 0);
  ASSERT_TRUE(logged.ok());
  int scaled_at = -1, replica1_scheduled_at = -1;
  for (int i = 0; i < static_cast<int>(logged->size()); ++i) {
    const Event& e = (*logged)[i];
    if (e.reason == "Scaled" && scaled_at < 0) scaled_at = i;
    if (e.reason == "Scheduled" && absl::StrContains(e.message, "replica 1") &&
        replica1_scheduled_at < 0) {
      replica1_scheduled_at = i;
    }
  }
  ASSERT_GE(scaled_at, 0) << ::testing::PrintToString(EventReasons("qwen3-32b"));
  ASSERT_GE(replica1_scheduled_at, 0) << ::testing::PrintToString(EventMessages("qwen3-32b"));
  EXPECT_LT(scaled_at, replica1_scheduled_at)
      << ::testing::PrintToString(EventMessages("qwen3-32b"));
  EXPECT_EQ((*logged)[scaled_at].message, "replicas 1 -> 2; adding replica 1");
}

TEST_F(DeployControllerTest, DeterministicFailureFailsOverAtOnceAndMarksBroken) {
  knowledge_.stacks[1].verdict = "untested";  // 0.9.2 bare untested now
  knowledge_.stacks[0].rank = 0;              // 0.11.0 first
  diagnoser_.Add("unsupported target: 'gfx928'", "triton_unsupported_gpu_target", "failover", "failover");
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  auto first = a.last().instances(0);
  EXPECT_EQ(first.stack_id(), "vllm-0.11.0-bare");
  Report("node-a", &a, first, dcufleet::v1::INSTANCE_FAILED,
         {"Traceback (most recent call last):", "unsupported target: 'gfx928'", "PassManager::run failed"});
  controller_->ReconcileOnceForTest();  // diagnose + failover
  controller_->ReconcileOnceForTest();  // launch the next plan (no back-off)
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.status().attempts_size(), 2);
  EXPECT_EQ(d.status().attempts(0).findings(0).failure_class(), "triton_unsupported_gpu_target");
  EXPECT_EQ(d.status().attempts(1).stack_id(), "vllm-0.9.2-bare");
  EXPECT_EQ(a.last().instances_size(), 1);
  EXPECT_EQ(a.last().instances(0).instance_id(), d.status().attempts(1).instance_id());
  EXPECT_THAT(d.status().failed_stacks(), ::testing::ElementsAre("vllm-0.11.0-bare"));
  // dcuctl logs --previous: the failed attempt, its log tail kept with it.
  DeployController::AttemptSelector previous;
  previous.previous = true;
  auto failed = controller_->FindAttempt("qwen3-32b", previous);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(failed->attempt->instance_id(), first.instance_id());
  EXPECT_EQ(controller_->FindAttempt("qwen3-32b", {})->attempt->instance_id(),
            d.status().attempts(1).instance_id());
  ASSERT_FALSE(knowledge_.outcomes.empty());
  EXPECT_EQ(knowledge_.outcomes[0].scope, "stack_arch");
  EXPECT_EQ(knowledge_.outcomes[0].failure_class, "triton_unsupported_gpu_target");
  // A second deployment of the same model goes straight to the working plan.
  Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  auto spec2 = Spec(2);
  spec2.set_name("qwen3-32b-b");
  ASSERT_TRUE(controller_->Deploy(spec2, false).ok());
  controller_->ReconcileOnceForTest();
  auto d2 = Get("qwen3-32b-b");
  ASSERT_EQ(d2.status().attempts_size(), 1);
  EXPECT_NE(d2.status().attempts(0).stack_id(), "vllm-0.11.0-bare");
  EXPECT_EQ(d2.status().excluded_plans(0).stack_id(), "vllm-0.11.0-bare");
  // It does not take the devices the first deployment holds.
  EXPECT_THAT(d2.status().attempts(0).placement().device_indices(), ::testing::ElementsAre(4, 5));
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// An instance its node never reports fails once the start-up deadline and
// the report grace have passed, and not before: the passes in between find
// nothing to do and remember until when that holds (ObserveMemo); the first
// pass after the deadline acts.
TEST_F(DeployControllerTest, AnInstanceItsNodeNeverReportsFailsAfterTheDeadlineNotBefore) {
  RecordingSession a;
  Connect("node-a", &a);
  auto spec = Spec();
  spec.set_startup_timeout_s(100);  // + 60 s report grace: 160 s
  ASSERT_TRUE(controller_->Deploy(spec, false).ok());
  controller_->ReconcileOnceForTest();
  ASSERT_EQ(Get("qwen3-32b").status().attempts_size(), 1);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Seconds(50));
    controller_->ReconcileOnceForTest();
  }
  auto before = Get("qwen3-32b");
  ASSERT_EQ(before.status().attempts_size(), 1);
  EXPECT_EQ(before.status().attempts(0).ended_at_ms(), 0) << "150 s: still within the deadline";
  clock_.Advance(absl::Seconds(11));
  controller_->ReconcileOnceForTest();
  auto after = Get("qwen3-32b");
  ASSERT_GE(after.status().attempts_size(), 1);
  EXPECT_NE(after.status().attempts(0).ended_at_ms(), 0) << "161 s: past the deadline";
  EXPECT_EQ(after.status().attempts(0).message(), "the agent never reported the instance");
}

TEST_F(DeployControllerTest, AutoRemediationIsAppliedOnceThenBackOff) {
  diagnoser_.Add("wvSplitK", "missing_custom_op", "auto", "set_env", {{"VLLM_ROCM_USE_SKINNY_GEMM", "0"}});
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_FAILED,
         {"AttributeError: '_OpNamespace' '_rocm_C' object has no attribute 'wvSplitK'"});
  controller_->ReconcileOnceForTest();
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.status().attempts_size(), 2);
  EXPECT_EQ(a.last().instances(0).env().at("VLLM_ROCM_USE_SKINNY_GEMM"), "0");
  EXPECT_EQ(d.status().attempts(1).stack_id(), d.status().attempts(0).stack_id());
  // Same failure again: the remediation is spent, so back off instead.
  Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_FAILED,
         {"AttributeError: '_OpNamespace' '_rocm_C' object has no attribute 'wvSplitK'"});
  controller_->ReconcileOnceForTest();
  d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_BACKOFF);
  int64_t wait_ms = d.status().next_attempt_at_ms() - absl::ToUnixMillis(clock_.Now());
  // Second failure on this plan: 10 s doubled once, ± 20% jitter.
  EXPECT_GE(wait_ms, 16000);
  EXPECT_LE(wait_ms, 24000);
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(Get("qwen3-32b").status().attempts_size(), 2);  // still waiting
  clock_.Advance(absl::Seconds(25));
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(Get("qwen3-32b").status().attempts_size(), 3);
}

TEST_F(DeployControllerTest, HumanRemediationStopsWithTheAction) {
  diagnoser_.Add("No such file", "model_path_not_found", "human", "human");
  diagnoser_.rules.back().finding.set_remediation_detail("copy the model to the node");
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_FAILED, {"OSError: No such file"});
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_FAILED);
  EXPECT_THAT(d.status().message(), HasSubstr("copy the model to the node"));
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(Get("qwen3-32b").status().attempts_size(), 1);
  EXPECT_TRUE(a.last().instances().empty());
}

TEST_F(DeployControllerTest, UnschedulableNamesEveryNode) {
  RecordingSession a, b, c;
  Connect("node-a", &a, "gfx928", 8, 4 * kGiB);  // memory held
  Connect("node-b", &b, "gfx90a", 4);             // no stack for the arch
  Connect("node-c", &c, "gfx928", 8);
  knowledge_.nodes_without_model.insert("node-c");
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
  ASSERT_EQ(d.status().rejections_size(), 3);
  EXPECT_THAT(d.status().rejections(0).reason(), HasSubstr("0 of 8 devices"));
  EXPECT_THAT(d.status().rejections(0).reason(), HasSubstr("device view"));
  EXPECT_THAT(d.status().rejections(1).reason(), HasSubstr("gfx90a has no known stack"));
  EXPECT_THAT(d.status().rejections(2).reason(), HasSubstr("not found"));
  EXPECT_TRUE(a.assignments.empty() || a.last().instances().empty());
}

// A log reader of a replica that has not launched (here: no node fits) is
// told so with what its status says; a follower waits on that (GetLogs).
// Asking for the attempt before it is still NOT_FOUND.
TEST_F(DeployControllerTest, AnUnlaunchedReplicaHasNoAttemptAndSaysWhy) {
  RecordingSession a;
  Connect("node-a", &a, "gfx90a", 4);  // no stack for the arch
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  auto found = controller_->FindAttempt("qwen3-32b", {});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->attempt.has_value());
  EXPECT_THAT(found->not_launched, HasSubstr("deployment 'qwen3-32b' has not launched yet: "));
  EXPECT_THAT(found->not_launched, HasSubstr(Get("qwen3-32b").status().message()));
  DeployController::AttemptSelector previous;
  previous.previous = true;
  EXPECT_EQ(controller_->FindAttempt("qwen3-32b", previous).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(controller_->FindAttempt("nope", {}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DeployControllerTest, UnschedulableNamesEveryBlockerOfANode) {
  RecordingSession z;
  Connect("node-z100", &z, "gfx906", 4);
  knowledge_.nodes_without_runtime.insert("node-z100");
  knowledge_.nodes_without_model.insert("node-z100");
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.status().rejections_size(), 1);
  EXPECT_THAT(d.status().rejections(0).reason(), HasSubstr("vllm-0.18-image not installed"));
  EXPECT_THAT(d.status().rejections(0).reason(), HasSubstr("model qwen3-32b not found"));
}

TEST_F(DeployControllerTest, UnreclaimedDevicesAreNamedWithTheirDeviceViewFigures) {
  RecordingSession a;
  auto hello = MakeHello("node-a", "gfx928", 2, 64 * kGiB, 48 * kGiB / 10);
  for (auto& d : *hello.mutable_inventory()->mutable_devices()) d.set_unreclaimed_bytes(59 * kGiB);
  ASSERT_TRUE(fleet_->OnHello(hello, &a).ok());
  ASSERT_TRUE(controller_->Deploy(Spec(2), false).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.status().rejections_size(), 1);
  EXPECT_THAT(d.status().rejections(0).reason(),
              HasSubstr("device 1 holds 59.00 GiB unreclaimed (4.80 GiB of 64.00 GiB free)"));
}

class LostNodeTest : public DeployControllerTest {
 protected:
  // Ready on node-a; node-a goes silent past lost-after; the deployment is
  // rescheduled onto node-b. Returns node-a's instance.
  dcufleet::v1::InstanceSpec ReadyThenLost() {
    Connect("node-a", &a_);
    Connect("node-b", &b_);
    EXPECT_TRUE(controller_->Deploy(Spec(), false).ok());
    controller_->ReconcileOnceForTest();
    auto first = a_.last().instances(0);
    Report("node-a", &a_, first, dcufleet::v1::INSTANCE_READY);
    controller_->ReconcileOnceForTest();
    fleet_->OnDisconnect("node-a", &a_);
    clock_.Advance(absl::Seconds(61));
    EXPECT_TRUE(fleet_->OnStatus("node-b", dcufleet::v1::NodeStatus(), &b_).ok());
    fleet_->Tick();
    controller_->ReconcileOnceForTest();
    controller_->ReconcileOnceForTest();
    return first;
  }
  // node-a reconnects; its hello says it still runs `id`, Ready.
  void Returns(const std::string& id) {
    auto hello = MakeHello("node-a", "gfx928", 8, 64 * kGiB, 40 * kGiB);
    auto* inst = hello.add_instances();
    inst->set_instance_id(id);
    inst->set_phase(dcufleet::v1::INSTANCE_READY);
    ASSERT_TRUE(fleet_->OnHello(hello, &a2_).ok());
    controller_->ReconcileOnceForTest();
  }
  RecordingSession a_, b_, a2_;
};

TEST_F(LostNodeTest, LostNodeIsRescheduledAndItsInstanceKeptAsAnOrphan) {
  auto first = ReadyThenLost();
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.status().attempts_size(), 2);
  EXPECT_TRUE(d.status().attempts(0).orphaned());
  EXPECT_EQ(d.status().attempts(1).placement().node(), "node-b");
  ASSERT_FALSE(b_.assignments.empty());
  EXPECT_EQ(b_.last().instances_size(), 1);
  // node-a's desired set still names its instance: a partition must not stop it.
  auto assigned = controller_->AssignedTo("node-a");
  ASSERT_EQ(assigned.size(), 1u);
  EXPECT_EQ(assigned[0].instance_id(), first.instance_id());
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

TEST_F(LostNodeTest, ReturningNodeWithAReadyReplacementElsewhereStopsItsDuplicate) {
  auto first = ReadyThenLost();
  Report("node-b", &b_, b_.last().instances(0), dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  ASSERT_EQ(Get("qwen3-32b").status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  Returns(first.instance_id());
  ASSERT_FALSE(a2_.assignments.empty());
  EXPECT_EQ(a2_.last().instances_size(), 0) << "the duplicate on node-a should be stopped";
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().attempts_size(), 2);
  EXPECT_FALSE(d.status().attempts(0).orphaned());
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  EXPECT_EQ(b_.last().instances_size(), 1) << "the replacement keeps serving";
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::Contains("DuplicateStopped"));
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

TEST_F(LostNodeTest, ReturningNodeWithNoReadyReplacementKeepsItsInstance) {
  auto first = ReadyThenLost();
  // node-b's replacement is still starting when node-a returns.
  Returns(first.instance_id());
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.status().attempts_size(), 3);
  EXPECT_EQ(d.status().attempts(1).phase(), dcufleet::v1::INSTANCE_STOPPED);
  EXPECT_THAT(d.status().attempts(1).message(), HasSubstr("superseded"));
  const auto& kept = d.status().attempts(2);
  EXPECT_EQ(kept.instance_id(), first.instance_id());
  EXPECT_EQ(kept.readopted_from(), 1);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(kept.instance(), first))
      << "the re-adopted spec must be the one the agent runs, or it would restart it";
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  EXPECT_EQ(d.status().endpoint(), absl::StrCat("node-a:", first.port()));
  ASSERT_FALSE(a2_.assignments.empty());
  ASSERT_EQ(a2_.last().instances_size(), 1);
  EXPECT_EQ(a2_.last().instances(0).instance_id(), first.instance_id());
  EXPECT_EQ(b_.last().instances_size(), 0) << "the unready replacement should be stopped";
  // The kept instance's launch was recorded once, when it first got Ready.
  int ready_outcomes = 0;
  for (const auto& o : knowledge_.outcomes) ready_outcomes += o.ready;
  EXPECT_EQ(ready_outcomes, 1);
  // A superseded attempt is not a failure of its plan.
  EXPECT_EQ(d.status().failed_stacks_size(), 0);
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

TEST_F(LostNodeTest, ReturningNodeWithoutTheInstanceForgetsTheOrphan) {
  ReadyThenLost();
  Returns("some-other-instance");
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().attempts_size(), 2);
  EXPECT_FALSE(d.status().attempts(0).orphaned());
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::Contains("OrphanGone"));
  EXPECT_TRUE(controller_->AssignedTo("node-a").empty());
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// Issue 16: an instance SIGKILLed while serving was "unknown (10%) → human"
// with a health-check access line as evidence.
TEST_F(DeployControllerTest, ASignalDeathWhileServingIsItsOwnClassAndIsRestarted) {
  RecordingSession a;
  auto spec = ServingOnNodeA(&a);
  dcufleet::v1::InstanceEvent ev;
  ev.mutable_status()->set_instance_id(spec.instance_id());
  ev.mutable_status()->set_phase(dcufleet::v1::INSTANCE_FAILED);
  ev.mutable_status()->set_exit_code(-1);
  ev.mutable_status()->set_term_signal(9);
  // The agent's own wording (InstanceSupervisor): the class is told by the
  // typed signal, which a message test once missed ("process " prefix).
  ev.mutable_status()->set_message("process killed by signal 9");
  ev.mutable_status()->add_log_tail("INFO:     127.0.0.1:51234 - \"GET /health HTTP/1.1\" 200 OK");
  ASSERT_TRUE(fleet_->OnInstanceEvent("node-a", ev, &a).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  ASSERT_GE(d.status().attempts_size(), 1);
  const auto& first = d.status().attempts(0);
  ASSERT_EQ(first.findings_size(), 1);
  EXPECT_EQ(first.findings(0).failure_class(), "signal_while_serving");
  EXPECT_EQ(first.term_signal(), 9);
  EXPECT_THAT(EventMessages("qwen3-32b"),
              ::testing::Contains(::testing::HasSubstr(", killed by signal 9: signal_while_serving")));
  EXPECT_NE(d.status().phase(), dcufleet::v1::DEPLOYMENT_FAILED) << d.status().message();
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_BACKOFF) << d.status().message();
  // Recorded against nobody's stack.
  ASSERT_FALSE(knowledge_.outcomes.empty());
  EXPECT_EQ(knowledge_.outcomes.back().failure_class, "signal_while_serving");
}

// Issue 23: a start-up the agent ended for no progress is diagnosed as such,
// with the phase it was stuck in, ahead of what the log's own lines suggest,
// and it counts against the node or the moment, never the stack.
TEST_F(DeployControllerTest, AStalledStartUpIsDiagnosedWithItsPhaseAndSparesTheStack) {
  // The tail's NCCL WARN is recognised by the (fake) classifier too.
  diagnoser_.Add("NCCL WARN", "nccl_rccl_init_failure", "failover", "failover");
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  const auto inst = a.last().instances(0);
  dcufleet::v1::InstanceEvent ev;
  auto* is = ev.mutable_status();
  is->set_instance_id(inst.instance_id());
  is->set_phase(dcufleet::v1::INSTANCE_FAILED);
  is->set_port(inst.port());
  is->set_message("stuck 5m at starting (distributed init) after `NCCL INFO ncclCommInitRank "
                  "comm 0x1 rank 0 nranks 2` (stall window 5m)");
  is->add_log_tail("node-a:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2");
  is->add_log_tail("node-a:1:1 [0] NCCL WARN socket: connect to 10.0.0.2<4321> timed out");
  auto* st = is->mutable_startup();
  st->set_phase(dcufleet::v1::STARTUP_STARTING);
  st->set_activity(dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT);
  st->set_stopped_by(dcufleet::v1::STARTUP_STOP_STALLED);
  st->set_stuck_for_ms(300000);
  st->set_stall_window_ms(300000);
  ASSERT_TRUE(fleet_->OnInstanceEvent("node-a", ev, &a).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  ASSERT_GE(d.status().attempts_size(), 1);
  const auto& first = d.status().attempts(0);
  ASSERT_EQ(first.findings_size(), 2);
  EXPECT_EQ(first.findings(0).failure_class(), "startup_stalled");
  EXPECT_EQ(first.findings(0).params().at("phase"), "starting");
  EXPECT_EQ(first.findings(0).params().at("activity"), "distributed init");
  EXPECT_THAT(first.findings(0).evidence(0), HasSubstr("stuck 5m at starting (distributed init)"));
  EXPECT_THAT(first.findings(0).remediation_detail(), HasSubstr("NCCL_SOCKET_IFNAME"));
  EXPECT_EQ(first.findings(1).failure_class(), "nccl_rccl_init_failure");
  // Retried on the same plan with back-off, not failed over by the log's
  // failover rule, and recorded against nobody's stack.
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_BACKOFF) << d.status().message();
  EXPECT_EQ(d.status().failed_stacks_size(), 0);
  ASSERT_FALSE(knowledge_.outcomes.empty());
  EXPECT_EQ(knowledge_.outcomes.back().failure_class, "startup_stalled");
  EXPECT_EQ(modelkit::DefaultScopeOfFailureClass("startup_stalled"), dcufleet::v1::SCOPE_NODE_STATE);
  bool event_names_phase = false;
  auto events = store_->ListEvents("deployment", "qwen3-32b", 0);
  for (const auto& e : *events) {
    if (e.reason == "Failed" && absl::StrContains(e.message, "startup_stalled — stuck 5m at starting")) {
      event_names_phase = true;
    }
  }
  EXPECT_TRUE(event_names_phase);
}

// Issue 16: the long ConfigAudit line repeated for every attempt.
TEST_F(DeployControllerTest, TheConfigAuditIsAnEventOncePerChangeNotPerAttempt) {
  dcufleet::v1::Finding finding;
  finding.set_code("head_dim_missing");
  finding.set_message("config.json has no head_dim");
  knowledge_.preparation.findings.push_back(finding);
  diagnoser_.Add("Connection reset", "nccl_rccl_init_failure", "auto", "retry");
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  int launched = 0;
  for (int i = 0; i < 6 && launched < 3; ++i) {
    controller_->ReconcileOnceForTest();
    clock_.Advance(absl::Minutes(5));
    if (a.assignments.empty() || a.last().instances_size() == 0) continue;
    ++launched;
    Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_FAILED, {"Connection reset"});
  }
  ASSERT_GE(launched, 2);
  controller_->ReconcileOnceForTest();
  auto reasons = EventReasons("qwen3-32b");
  EXPECT_GE(std::count(reasons.begin(), reasons.end(), "Scheduled"), 2) << ::testing::PrintToString(reasons);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "ConfigAudit"), 1)
      << ::testing::PrintToString(reasons);
}

TEST_F(DeployControllerTest, RestartedControllerResendsTheSameInstanceNotANewOne) {
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  std::string id = a.last().instances(0).instance_id();
  int64_t gen = a.last().generation();
  // "kill -9": a new FleetState and controller over the same database.
  fleet_ = std::make_unique<FleetState>(store_.get(), store_.get(), &clock_, FleetState::Options());
  ASSERT_TRUE(fleet_->Load().ok());
  controller_.reset();
  MakeController();
  RecordingSession a2;
  auto hello = MakeHello("node-a", "gfx928", 8, 64 * kGiB, 40 * kGiB);
  hello.add_instances()->set_instance_id(id);
  ASSERT_TRUE(fleet_->OnHello(hello, &a2).ok());
  controller_->ReconcileOnceForTest();
  ASSERT_FALSE(a2.assignments.empty());
  ASSERT_EQ(a2.last().instances_size(), 1);
  EXPECT_EQ(a2.last().instances(0).instance_id(), id);
  EXPECT_GE(a2.last().generation(), gen);
  EXPECT_EQ(Get("qwen3-32b").status().attempts_size(), 1);
}

TEST_F(DeployControllerTest, DeleteEmptiesTheAssignmentThenForgets) {
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  auto inst = a.last().instances(0);
  Report("node-a", &a, inst, dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  ASSERT_TRUE(controller_->Delete("qwen3-32b").ok());
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(a.last().instances_size(), 0);
  EXPECT_TRUE(controller_->Get("qwen3-32b").ok());  // still reported by the agent
  Report("node-a", &a, inst, dcufleet::v1::INSTANCE_STOPPED);
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(controller_->Get("qwen3-32b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(deploy_store_->ListDeployments()->empty());
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// `dcuctl delete --wait` right after a controller restart printed "deleted;
// its instances are stopped" while the instance served for 11 s more: the
// restarted controller's view of the NotReady node listed no instances.
TEST_F(DeployControllerTest, DeleteWaitsForANodeThatIsNotConnected) {
  RecordingSession a;
  auto inst = ServingOnNodeA(&a);
  // Controller restart: node-a is NotReady until its agent reconnects.
  fleet_ = std::make_unique<FleetState>(store_.get(), store_.get(), &clock_, FleetState::Options());
  ASSERT_TRUE(fleet_->Load().ok());
  controller_.reset();
  MakeController();
  ASSERT_TRUE(controller_->Delete("qwen3-32b").ok());
  controller_->ReconcileOnceForTest();
  EXPECT_TRUE(controller_->Get("qwen3-32b").ok()) << "deleted while the node could not confirm it";
  // The agent comes back still running it: it is told to stop it, and the
  // deployment goes once the agent reports it stopped.
  RecordingSession a2;
  auto hello = MakeHello("node-a", "gfx928", 8, 64 * kGiB, 40 * kGiB);
  auto* running = hello.add_instances();
  running->set_instance_id(inst.instance_id());
  running->set_phase(dcufleet::v1::INSTANCE_READY);
  ASSERT_TRUE(fleet_->OnHello(hello, &a2).ok());
  controller_->ReconcileOnceForTest();
  ASSERT_FALSE(a2.assignments.empty());
  EXPECT_EQ(a2.last().instances_size(), 0);
  EXPECT_TRUE(controller_->Get("qwen3-32b").ok());
  Report("node-a", &a2, inst, dcufleet::v1::INSTANCE_STOPPED);
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(controller_->Get("qwen3-32b").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DeployControllerTest, BadSpecsAreRefusedNamingTheField) {
  auto s = Spec();
  s.set_model("Qwen3 32B; rm -rf /");
  EXPECT_THAT(controller_->Deploy(s, false).status().message(), HasSubstr("model"));
  s = Spec();
  s.set_tp(1000);
  EXPECT_THAT(controller_->Deploy(s, false).status().message(), HasSubstr("tp"));
  s = Spec();
  s.set_model("no-such-model");
  EXPECT_EQ(controller_->Deploy(s, false).status().code(), absl::StatusCode::kNotFound);
  s = Spec();
  s.set_runtime("k8s");
  EXPECT_THAT(controller_->Deploy(s, false).status().message(), HasSubstr("runtime"));
  EXPECT_TRUE(deploy_store_->ListDeployments()->empty());
}

TEST_F(DeployControllerTest, DryRunStoresNothing) {
  RecordingSession a;
  Connect("node-a", &a);
  auto r = controller_->Deploy(Spec(0), true);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->deployment().status().message(), HasSubstr("dry run"));
  EXPECT_EQ(r->deployment().status().attempts(0).placement().tp(), 2);  // smallest that fits
  EXPECT_TRUE(deploy_store_->ListDeployments()->empty());
  EXPECT_TRUE(a.assignments.empty());
}

// The dry run's launch and the real one are planned by one LaunchPlanner: the
// instance a dry run shows is the one the next launch sends, but for the
// per-attempt fields.
dcufleet::v1::InstanceSpec WithoutPerAttemptFields(dcufleet::v1::InstanceSpec s) {
  s.clear_instance_id();
  s.clear_attempt();
  return s;
}

void ExpectSameLaunch(const dcufleet::v1::InstanceSpec& dry, const dcufleet::v1::InstanceSpec& real) {
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(WithoutPerAttemptFields(dry), WithoutPerAttemptFields(real)))
      << diff << "dry run:\n" << dry.DebugString() << "real:\n" << real.DebugString();
}

TEST_F(DeployControllerTest, DryRunShowsTheSpecTheNextLaunchSendsAfterRemediations) {
  // A damaged config fixed with --hf-overrides, a recipe's library order, and
  // two failures whose remediations change the library order and add an arg.
  knowledge_.preparation.remediation = "hf_overrides";
  knowledge_.preparation.remediation_detail = "--hf-overrides {\"head_dim\": 128}";
  knowledge_.preparation.extra_args = {"--hf-overrides", "{\"head_dim\": 128}"};
  knowledge_.recipe_ld_library_path = {"/opt/rocm/lib", "/opt/hyhal/lib"};
  knowledge_.recipe_env = {{"HIP_FORCE_DEV_KERNARG", "1"}};
  diagnoser_.Add("undefined symbol", "shared_lib_undefined_symbol", "auto",
                 "prepend_ld_library_path", {{"paths", "/opt/dtk/lib:/opt/rocm/lib"}});
  diagnoser_.Add("No available memory for the cache blocks", "no_cache_blocks", "auto", "add_arg",
                 {{"flag", "--kv-cache-memory-bytes"}, {"value", "${memory_plan.kv_cache_bytes}"}});
  RecordingSession a;
  Connect("node-a", &a);
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  auto dry = controller_->Deploy(Spec(), true);
  ASSERT_TRUE(dry.ok());
  ASSERT_EQ(dry->deployment().status().attempts_size(), 1);
  controller_->ReconcileOnceForTest();
  ExpectSameLaunch(dry->deployment().status().attempts(0).instance(), a.last().instances(0));
  EXPECT_THAT(a.last().instances(0).argv(), ::testing::Contains("--hf-overrides"));

  Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_FAILED,
         {"ImportError: libhipblaslt.so: undefined symbol: hipblasLtMatmul"});
  controller_->ReconcileOnceForTest();  // remediated and relaunched in the pass
  Report("node-a", &a, a.last().instances(0), dcufleet::v1::INSTANCE_FAILED,
         {"ValueError: No available memory for the cache blocks."});
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.status().attempts_size(), 3);
  const auto& real = a.last().instances(0);
  EXPECT_EQ(real.instance_id(), d.status().attempts(2).instance_id());
  // The learned order first, then the recipe's remaining entries.
  EXPECT_THAT(real.ld_library_path_prefix(),
              ::testing::ElementsAre("/opt/dtk/lib", "/opt/rocm/lib", "/opt/hyhal/lib"));
  EXPECT_THAT(real.argv(), ::testing::Contains("--hf-overrides"));
  EXPECT_THAT(real.argv(), ::testing::Contains("--kv-cache-memory-bytes"));

  dry = controller_->Deploy(Spec(), true);
  ASSERT_TRUE(dry.ok());
  ASSERT_EQ(dry->deployment().status().attempts_size(), 1);
  ExpectSameLaunch(dry->deployment().status().attempts(0).instance(), real);
  EXPECT_EQ(dry->deployment().status().attempts(0).instance().attempt(), 4);
  // Rendered with the placed devices' real size, not 0.
  ASSERT_FALSE(knowledge_.rendered_device_totals.empty());
  for (int64_t total : knowledge_.rendered_device_totals) EXPECT_EQ(total, 64 * kGiB);
}

TEST_F(DeployControllerTest, DryRunOfAConfigOverlayMatchesTheLaunch) {
  knowledge_.preparation.remediation = "overlay_dir";
  knowledge_.preparation.remediation_detail = "config.json overlay";
  knowledge_.preparation.overlay_dir = "/var/lib/dcufleet/overlays/qwen3-32b";
  knowledge_.preparation.overlay_config_json = "{\"head_dim\": 128}";
  knowledge_.preparation.model_path = "/var/lib/dcufleet/overlays/qwen3-32b";
  RecordingSession a;
  Connect("node-a", &a);
  auto dry = controller_->Deploy(Spec(), true);
  ASSERT_TRUE(dry.ok());
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  const auto& real = a.last().instances(0);
  EXPECT_EQ(real.overlay_dir(), "/var/lib/dcufleet/overlays/qwen3-32b");
  EXPECT_EQ(real.model_path(), "/models/Qwen3-32B");  // the user's directory
  EXPECT_THAT(real.argv(), ::testing::Contains("/var/lib/dcufleet/overlays/qwen3-32b"));
  ExpectSameLaunch(dry->deployment().status().attempts(0).instance(), real);
}


// --- Replicas (issue 17): each replica is a deployment of its own to the
// reconciler; these tests check what ties them together.

class ReplicaTest : public DeployControllerTest {
 protected:
  dcufleet::v1::DeploymentSpec ReplicaSpec(int replicas, int tp = 4) {
    auto s = Spec(tp);
    s.set_replicas(replicas);
    return s;
  }
  // The instances node `s` was last told to run, by id.
  static std::vector<std::string> Ids(const RecordingSession& s) {
    std::vector<std::string> out;
    if (s.assignments.empty()) return out;
    for (const auto& i : s.last().instances()) out.push_back(i.instance_id());
    return out;
  }
  void ReportAll(const std::string& node, RecordingSession* s, dcufleet::v1::InstancePhase p) {
    ASSERT_FALSE(s->assignments.empty());
    for (const auto& i : s->last().instances()) Report(node, s, i, p);
  }
  // node-a and node-b connect, two replicas of the default spec are
  // deployed, one on each, and both report Ready.
  void ServeTwoReplicas() {
    Connect("node-a", &a_);
    Connect("node-b", &b_);
    ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
    controller_->ReconcileOnceForTest();
    ReportAll("node-a", &a_, dcufleet::v1::INSTANCE_READY);
    ReportAll("node-b", &b_, dcufleet::v1::INSTANCE_READY);
    controller_->ReconcileOnceForTest();
  }
  RecordingSession a_, b_;
};

TEST_F(ReplicaTest, ReplicasSpreadAcrossNodesFirstAndNeverShareADevice) {
  Connect("node-a", &a_);
  Connect("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(3), false).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  ASSERT_EQ(d.replicas_size(), 3);
  std::map<std::string, std::set<int>> devices;
  std::map<std::string, int> per_node;
  for (const auto& r : d.replicas()) {
    ASSERT_FALSE(r.node().empty()) << "replica " << r.index() << ": " << r.message();
    ++per_node[r.node()];
    for (int dev : r.device_indices()) {
      EXPECT_TRUE(devices[r.node()].insert(dev).second)
          << "device " << dev << " of " << r.node() << " given to two replicas";
    }
  }
  // Two nodes, three replicas: one on each before a second on either.
  EXPECT_EQ(per_node.size(), 2u);
  EXPECT_EQ(per_node["node-a"] + per_node["node-b"], 3);
  EXPECT_EQ(Ids(a_).size() + Ids(b_).size(), 3u);
  EXPECT_EQ(d.replicas(0).node(), "node-a");
  EXPECT_EQ(d.replicas(1).node(), "node-b") << "the second replica should go to the empty node";
  EXPECT_EQ(d.ready_replicas(), 0);
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_LAUNCHING);
}

TEST_F(ReplicaTest, ReadyOnlyWhenEveryReplicaIsAndEachHasItsEndpoint) {
  Connect("node-a", &a_);
  Connect("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  controller_->ReconcileOnceForTest();
  ReportAll("node-a", &a_, dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.ready_replicas(), 1);
  EXPECT_NE(d.status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  EXPECT_THAT(d.status().message(), HasSubstr("replica 1"));
  ReportAll("node-b", &b_, dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  d = Get("qwen3-32b");
  EXPECT_EQ(d.ready_replicas(), 2);
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  ASSERT_EQ(d.replicas_size(), 2);
  EXPECT_EQ(d.replicas(0).endpoint(), absl::StrCat("node-a:", d.replicas(0).port()));
  EXPECT_EQ(d.replicas(1).endpoint(), absl::StrCat("node-b:", d.replicas(1).port()));
  // One event stream for the deployment; each line says which replica.
  auto events = store_->ListEvents("deployment", "qwen3-32b", 0);
  ASSERT_TRUE(events.ok());
  int ready_events = 0;
  for (const auto& e : *events) {
    if (e.reason == "Ready") {
      ++ready_events;
      EXPECT_THAT(e.message, ::testing::StartsWith("replica "));
    }
  }
  EXPECT_EQ(ready_events, 2);
}

TEST_F(ReplicaTest, AFailedReplicaIsHandledAloneAndItsSiblingKeepsServing) {
  ServeTwoReplicas();
  const auto serving_a = Ids(a_);
  ASSERT_EQ(serving_a.size(), 1u);
  // Replica 1's instance dies with an unexplained failure.
  Report("node-b", &b_, b_.last().instances(0), dcufleet::v1::INSTANCE_FAILED, {"boom"});
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.ready_replicas(), 1);
  EXPECT_EQ(d.replicas(0).phase(), dcufleet::v1::DEPLOYMENT_READY);
  EXPECT_EQ(d.replicas(0).restarts(), 0);
  EXPECT_EQ(d.replicas(1).restarts(), 1);
  EXPECT_EQ(Ids(a_), serving_a) << "replica 0 must not be touched";
  // The aggregate shows the replica that needs attention.
  EXPECT_EQ(d.replica(), 1);
}

TEST_F(ReplicaTest, ScaleDownRemovesTheWorstPlacedFirst) {
  Connect("node-a", &a_);
  Connect("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(3), false).ok());
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  // node-a holds replicas 0 and 2; all but replica 2 report Ready.
  ASSERT_EQ(d.replicas(2).node(), "node-a");
  for (const auto& i : a_.last().instances()) {
    if (i.instance_id() == d.replicas(0).instance_id()) Report("node-a", &a_, i, dcufleet::v1::INSTANCE_READY);
  }
  ReportAll("node-b", &b_, dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  // Not Ready goes first.
  auto r = controller_->Scale("qwen3-32b", 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->removed(), ::testing::ElementsAre(2));
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(Ids(a_).size(), 1u) << "replica 2's instance should be gone from node-a's set";
  Report("node-a", &a_, [&] {
    dcufleet::v1::InstanceSpec s;
    s.set_instance_id(d.replicas(2).instance_id());
    return s;
  }(), dcufleet::v1::INSTANCE_STOPPED);
  controller_->ReconcileOnceForTest();
  d = Get("qwen3-32b");
  EXPECT_EQ(d.replicas_size(), 2);
  EXPECT_EQ(d.spec().replicas(), 2);
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_READY);
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::IsSupersetOf({"Scaled", "ReplicaRemoved"}));
  // Both Ready on a node each: the highest index goes.
  r = controller_->Scale("qwen3-32b", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->removed(), ::testing::ElementsAre(1));
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

TEST_F(ReplicaTest, ScaleUpAddsTheLowestFreeIndexAndSurvivesARestart) {
  Connect("node-a", &a_);
  Connect("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(1), false).ok());
  controller_->ReconcileOnceForTest();
  auto r = controller_->Scale("qwen3-32b", 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->added(), ::testing::ElementsAre(1, 2));
  controller_->ReconcileOnceForTest();
  auto before = Get("qwen3-32b");
  ASSERT_EQ(before.replicas_size(), 3);
  EXPECT_EQ(before.replicas(1).node(), "node-b") << "spread: node-b held no replica";
  // The store holds one document per replica; a restarted controller sees
  // the same three, with the same instances.
  EXPECT_EQ(deploy_store_->ListDeployments()->size(), 3u);
  MakeController();
  auto after = Get("qwen3-32b");
  ASSERT_EQ(after.replicas_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(after.replicas(i).instance_id(), before.replicas(i).instance_id());
  }
  EXPECT_GE(after.revision(), before.revision());
  // Deploying the same spec with another count is a scale (kubectl apply);
  // any other change is refused with what to do.
  auto again = controller_->Deploy(ReplicaSpec(2), false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created());
  EXPECT_EQ(again->deployment().spec().replicas(), 2);
  // Any other change starts a rollout (RolloutTest below).
  auto other = ReplicaSpec(2);
  other.set_max_model_len(4096);
  auto rolled = controller_->Deploy(other, false);
  ASSERT_TRUE(rolled.ok()) << rolled.status();
  EXPECT_FALSE(rolled->created());
  EXPECT_EQ(rolled->deployment().spec().max_model_len(), 4096);
  EXPECT_EQ(rolled->deployment().updated_replicas(), 0);
  EXPECT_THAT(rolled->deployment().rollout_message(), HasSubstr("0 of 2"));
  EXPECT_EQ(controller_->Scale("qwen3-32b", -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(controller_->Scale("qwen3-32b", 257).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(controller_->Scale("nope", 2).status().code(), absl::StatusCode::kNotFound);
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// kubectl's scale to zero: every instance stops and its devices are free,
// the deployment (spec, identity, events) stays, through a restart; a scale
// up places it again.
TEST_F(ReplicaTest, ScaleToZeroStopsEveryInstanceKeepsTheDeploymentAndScalesBackUp) {
  ServeTwoReplicas();
  const auto ready = Get("qwen3-32b");
  ASSERT_EQ(ready.ready_replicas(), 2);
  const std::string uid = ready.uid();
  const auto ia = a_.last().instances(0), ib = b_.last().instances(0);

  auto r = controller_->Scale("qwen3-32b", 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->removed(), ::testing::ElementsAre(1)) << "both Ready: the highest index goes";
  EXPECT_TRUE(r->added().empty());
  EXPECT_EQ(r->previous_replicas(), 2);
  controller_->ReconcileOnceForTest();
  // Neither node is told to run anything now.
  EXPECT_THAT(Ids(a_), ::testing::IsEmpty());
  EXPECT_THAT(Ids(b_), ::testing::IsEmpty());
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  EXPECT_EQ(d.ready_replicas(), 0);
  EXPECT_EQ(d.spec().replicas(), 0);
  EXPECT_EQ(d.uid(), uid);
  EXPECT_THAT(d.status().message(), HasSubstr("stopping instance '" + ia.instance_id() + "'"));
  // Scaling up while that instance still stops would put a second engine
  // beside it on the same devices: refused, saying what to wait for.
  auto early = controller_->Scale("qwen3-32b", 1);
  EXPECT_EQ(early.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(early.status().message(), HasSubstr("still stopping instance"));

  Report("node-a", &a_, ia, dcufleet::v1::INSTANCE_STOPPED);
  Report("node-b", &b_, ib, dcufleet::v1::INSTANCE_STOPPED);
  controller_->ReconcileOnceForTest();
  controller_->ReconcileOnceForTest();
  d = Get("qwen3-32b");
  ASSERT_EQ(d.replicas_size(), 1) << d.DebugString();
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  EXPECT_THAT(d.status().message(), HasSubstr("no instance runs"));
  EXPECT_TRUE(d.replicas(0).instance_id().empty());
  EXPECT_TRUE(d.replicas(0).node().empty());
  EXPECT_EQ(d.status().attempts(d.status().attempts_size() - 1).phase(),
            dcufleet::v1::INSTANCE_STOPPED);
  EXPECT_EQ(Restarts(d), 0) << "stopped on purpose";
  // Passes with nothing to do place nothing.
  clock_.Advance(absl::Minutes(10));
  controller_->ReconcileOnceForTest();
  EXPECT_THAT(Ids(a_), ::testing::IsEmpty());
  EXPECT_THAT(Ids(b_), ::testing::IsEmpty());
  // Scaling to zero again changes nothing.
  auto again = controller_->Scale("qwen3-32b", 0);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->removed().empty());
  EXPECT_EQ(again->previous_replicas(), 0) << "dcuctl says (unchanged)";

  // A restarted controller keeps it at zero.
  MakeController();
  Connect("node-a", &a_);
  Connect("node-b", &b_);
  controller_->ReconcileOnceForTest();
  d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  EXPECT_THAT(controller_->AssignedTo("node-a"), ::testing::IsEmpty());
  EXPECT_THAT(controller_->AssignedTo("node-b"), ::testing::IsEmpty());

  // kubectl apply of the same spec with replicas 2 scales it up: two new
  // instances, placed afresh, under the same identity.
  auto up = controller_->Deploy(ReplicaSpec(2), false);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_FALSE(up->created());
  controller_->ReconcileOnceForTest();
  d = Get("qwen3-32b");
  EXPECT_EQ(d.uid(), uid);
  EXPECT_EQ(d.spec().replicas(), 2);
  EXPECT_NE(d.status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  ASSERT_EQ(d.replicas_size(), 2);
  EXPECT_EQ(Ids(a_).size() + Ids(b_).size(), 2u);
  for (const auto& rv : d.replicas()) {
    EXPECT_FALSE(rv.instance_id().empty());
    EXPECT_NE(rv.instance_id(), ia.instance_id());
    EXPECT_NE(rv.instance_id(), ib.instance_id());
  }
  EXPECT_THAT(EventMessages("qwen3-32b"),
              ::testing::IsSupersetOf({HasSubstr("replicas 2 -> 0"), HasSubstr("replicas 0 -> 2")}));
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// Scaled to zero in the middle of a rollout: the rollout ends (nothing runs
// to replace), the kept document holds the new spec, and no pass adds a
// replica while the deployment is at zero.
TEST_F(ReplicaTest, ScaleToZeroDuringARolloutEndsItOnTheNewSpecAndPlacesNothing) {
  ServeTwoReplicas();
  auto other = ReplicaSpec(2);
  other.set_max_model_len(4096);
  ASSERT_TRUE(controller_->Deploy(other, false).ok());
  controller_->ReconcileOnceForTest();  // the rollout's first step: a surge replica
  ASSERT_EQ(Get("qwen3-32b").replicas_size(), 3) << Get("qwen3-32b").DebugString();
  ASSERT_TRUE(controller_->Scale("qwen3-32b", 0).ok());
  for (int round = 0; round < 4; ++round) {
    controller_->ReconcileOnceForTest();
    // Whatever the nodes were told to stop has stopped.
    for (auto* s : {&a_, &b_}) {
      const std::string node = s == &a_ ? "node-a" : "node-b";
      const auto now = Get("qwen3-32b");  // held: a range-for over a temporary's field dangles
      for (const auto& r : now.replicas()) {
        if (r.instance_id().empty() || r.node() != node) continue;
        dcufleet::v1::InstanceSpec gone;
        gone.set_instance_id(r.instance_id());
        Report(node, s, gone, dcufleet::v1::INSTANCE_STOPPED);
      }
    }
  }
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  EXPECT_EQ(d.replicas_size(), 1) << d.DebugString();
  EXPECT_EQ(d.spec().max_model_len(), 4096) << "the rollout's target is the spec kept";
  EXPECT_TRUE(d.rollout_message().empty()) << d.rollout_message();
  // Ended by the scale, not completed: no replica runs the new spec.
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::Not(::testing::Contains("RolloutComplete")));
  EXPECT_THAT(Ids(a_), ::testing::IsEmpty());
  EXPECT_THAT(Ids(b_), ::testing::IsEmpty());
  clock_.Advance(absl::Minutes(5));
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(Get("qwen3-32b").replicas_size(), 1);
  EXPECT_THAT(Ids(a_), ::testing::IsEmpty());
  EXPECT_THAT(Ids(b_), ::testing::IsEmpty());
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// A spec applied while at zero is taken at once (nothing runs to roll), and
// replicas added later run it; `apply -f` of a deployment that says
// `replicas: 0` creates it at zero.
TEST_F(ReplicaTest, ASpecAppliedAtZeroIsTakenWithoutARolloutAndCreatingAtZeroPlacesNothing) {
  Connect("node-a", &a_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(1), false).ok());
  controller_->ReconcileOnceForTest();
  const auto inst = a_.last().instances(0);
  Report("node-a", &a_, inst, dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  // To zero and another max_model_len in one apply.
  auto other = ReplicaSpec(0);
  other.set_max_model_len(4096);
  auto applied = controller_->Deploy(other, false);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->change(), "taken at zero, nothing runs to roll: max_model_len 8192 -> 4096");
  controller_->ReconcileOnceForTest();
  EXPECT_THAT(Ids(a_), ::testing::IsEmpty());
  Report("node-a", &a_, inst, dcufleet::v1::INSTANCE_STOPPED);
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  EXPECT_EQ(d.spec().max_model_len(), 4096);
  EXPECT_TRUE(d.rollout_message().empty()) << d.rollout_message();
  EXPECT_EQ(d.current_revision().number(), 2);
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::Contains("SpecChanged"));
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::Not(::testing::Contains("RolloutStarted")));
  // Scaled up: the new replica runs the spec applied at zero.
  ASSERT_TRUE(controller_->Scale("qwen3-32b", 1).ok());
  controller_->ReconcileOnceForTest();
  ASSERT_EQ(Ids(a_).size(), 1u);
  // The stored replica, placed on its own spec: the one applied at zero.
  auto docs = deploy_store_->ListDeployments();
  ASSERT_TRUE(docs.ok()) << docs.status();
  int placed = 0;
  for (const auto& doc : *docs) {
    if (doc.spec().name() != "qwen3-32b") continue;
    ++placed;
    EXPECT_EQ(doc.spec().max_model_len(), 4096);
    EXPECT_FALSE(doc.status().scaled_to_zero());
    ASSERT_FALSE(doc.status().attempts().empty());
    EXPECT_EQ(doc.status().attempts(doc.status().attempts_size() - 1).ended_at_ms(), 0);
    EXPECT_EQ(doc.status().attempts(doc.status().attempts_size() - 1).instance_id(), Ids(a_)[0]);
  }
  EXPECT_EQ(placed, 1);

  // Created at zero: one document, nothing placed.
  auto zero = ReplicaSpec(0);
  zero.set_name("parked");
  auto created = controller_->Deploy(zero, false);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(created->created());
  controller_->ReconcileOnceForTest();
  d = Get("parked");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
  EXPECT_TRUE(d.status().attempts().empty());
  EXPECT_EQ(Ids(a_).size(), 1u) << "only qwen3-32b's instance";
  // Without replicas in the request: the default, one.
  auto unset = Spec();
  unset.set_name("defaulted");
  ASSERT_FALSE(unset.has_replicas());
  auto one = controller_->Deploy(unset, false);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->deployment().spec().replicas(), 1);
  ExpectAssignedMatchesTheDocuments({"node-a"});
}

TEST_F(ReplicaTest, DeleteStopsEveryReplicaThenForgetsThem) {
  Connect("node-a", &a_);
  Connect("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  controller_->ReconcileOnceForTest();
  auto ia = a_.last().instances(0);
  auto ib = b_.last().instances(0);
  Report("node-a", &a_, ia, dcufleet::v1::INSTANCE_READY);
  Report("node-b", &b_, ib, dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  ASSERT_TRUE(controller_->Delete("qwen3-32b").ok());
  controller_->ReconcileOnceForTest();
  EXPECT_TRUE(Ids(a_).empty());
  EXPECT_TRUE(Ids(b_).empty());
  Report("node-a", &a_, ia, dcufleet::v1::INSTANCE_STOPPED);
  controller_->ReconcileOnceForTest();
  EXPECT_TRUE(controller_->Get("qwen3-32b").ok()) << "replica 1 is still reported";
  Report("node-b", &b_, ib, dcufleet::v1::INSTANCE_STOPPED);
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(controller_->Get("qwen3-32b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(deploy_store_->ListDeployments()->empty());
  auto reasons = EventReasons("qwen3-32b");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "Deleted"), 1);
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// Issue 16: the endpoint named the node ("node-k100:8002"), which does not
// resolve; it carries the address the agent advertises.
TEST_F(ReplicaTest, EndpointsCarryTheAdvertisedAddress) {
  auto hello = MakeHello("node-a", "gfx928", 8, 64 * kGiB, 63 * kGiB);
  hello.set_advertise_address("10.20.30.40");
  ASSERT_TRUE(fleet_->OnHello(hello, &a_).ok());
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  controller_->ReconcileOnceForTest();
  ReportAll("node-a", &a_, dcufleet::v1::INSTANCE_READY);
  controller_->ReconcileOnceForTest();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().endpoint(), absl::StrCat("10.20.30.40:", d.replicas(0).port()));
  EXPECT_EQ(d.replicas(0).endpoint(), d.status().endpoint());
}

// A replica being removed does not speak for the deployment: its `deleted`
// once took the whole model out of the serving view, and the gateway
// answered 404 while the other replica served (found by the drain test).
TEST_F(ReplicaTest, AReplicaBeingRemovedLeavesTheModelServedByTheOthers) {
  ServeTwoReplicas();
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(1), false).ok());
  controller_->ReconcileOnceForTest();
  // One replica is leaving (its instance not stopped yet).
  auto d = Get("qwen3-32b");
  int leaving = 0;
  for (const auto& r : d.replicas()) leaving += r.phase() == dcufleet::v1::DEPLOYMENT_DELETING;
  ASSERT_EQ(leaving, 1) << d.DebugString();
  EXPECT_FALSE(d.status().deleted());
  auto view = ServingSnapshotOf({d}, {});
  ASSERT_EQ(view.models_size(), 1) << "the model stays served";
  int ready = 0;
  for (const auto& r : view.models(0).replicas()) ready += r.ready();
  EXPECT_EQ(ready, 1);
}

TEST_F(ReplicaTest, LogsFindAnInstanceOfAnyReplica) {
  Connect("node-a", &a_);
  Connect("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  controller_->ReconcileOnceForTest();
  auto ib = b_.last().instances(0);
  auto found = controller_->FindAttempt("qwen3-32b", {ib.instance_id()});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->attempt->placement().node(), "node-b");
  EXPECT_EQ(controller_->FindAttempt("qwen3-32b", {"qwen3-32b-9-zzzzzz"}).status().code(),
            absl::StatusCode::kNotFound);
  // By replica (dcuctl logs --replica): each its own node.
  DeployController::AttemptSelector by_replica;
  std::set<std::string> nodes;
  for (int r = 0; r < 2; ++r) {
    by_replica.replica = r;
    auto a = controller_->FindAttempt("qwen3-32b", by_replica);
    ASSERT_TRUE(a.ok()) << a.status();
    nodes.insert(a->attempt->placement().node());
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"node-a", "node-b"}));
  by_replica.replica = 5;
  auto missing = controller_->FindAttempt("qwen3-32b", by_replica);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), ::testing::HasSubstr("has no replica 5 (its replicas: 0, 1)"));
  // --previous: each replica has had one attempt.
  DeployController::AttemptSelector previous;
  previous.previous = true;
  auto none = controller_->FindAttempt("qwen3-32b", previous);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), ::testing::HasSubstr("has had one attempt"));
  // An instance id with another choice is refused.
  DeployController::AttemptSelector both{ib.instance_id(), 1, false};
  EXPECT_EQ(controller_->FindAttempt("qwen3-32b", both).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Rollouts (issue 17): a changed spec replaces replicas one at a time.
class RolloutTest : public ReplicaTest {
 protected:
  // Plays every node's agent for one round: instances newly assigned report
  // Ready, instances no longer assigned report Stopped; then a pass.
  // `fail_new` instances whose argv has it fail instead of becoming Ready.
  void Round(const std::string& fail_new = "") {
    controller_->ReconcileOnceForTest();
    for (auto& [node, session] : nodes_) {
      std::set<std::string> assigned;
      if (!session->assignments.empty()) {
        for (const auto& i : session->last().instances()) {
          assigned.insert(i.instance_id());
          if (running_[node].count(i.instance_id())) continue;
          bool fail = !fail_new.empty() && std::find(i.argv().begin(), i.argv().end(),
                                                     fail_new) != i.argv().end();
          Report(node, session, i,
                 fail ? dcufleet::v1::INSTANCE_FAILED : dcufleet::v1::INSTANCE_READY);
          if (!fail) running_[node][i.instance_id()] = i;
        }
      }
      for (auto it = running_[node].begin(); it != running_[node].end();) {
        if (assigned.count(it->first)) {
          ++it;
          continue;
        }
        Report(node, session, it->second, dcufleet::v1::INSTANCE_STOPPED);
        it = running_[node].erase(it);
      }
    }
    controller_->ReconcileOnceForTest();
  }
  void Add(const std::string& node, RecordingSession* s, int devices = 8) {
    Connect(node, s, "gfx928", devices);
    nodes_[node] = s;
  }
  // Every stored replica document runs max_model_len `len`.
  // Rounds until every replica runs max_model_len `len` (at most 12, then
  // one more for the removals to finish); whether they all do.
  bool RollOutUntilAllRun(int len) {
    for (int i = 0; i < 12 && !AllRun(len); ++i) Round();
    Round();
    return AllRun(len);
  }
  bool AllRun(int len) {
    auto docs = deploy_store_->ListDeployments();
    if (!docs.ok() || docs->empty()) return false;
    for (const auto& d : *docs) {
      if (d.status().deleted() || d.spec().max_model_len() != len) return false;
    }
    return true;
  }
  int Live() {
    int n = 0;
    // Held by name: `*ListDeployments()` in the range would dangle (the
    // StatusOr temporary dies before the loop runs).
    auto all = deploy_store_->ListDeployments();
    for (const auto& d : *all) n += d.status().deleted() ? 0 : 1;
    return n;
  }
  std::map<std::string, RecordingSession*> nodes_;
  std::map<std::string, std::map<std::string, dcufleet::v1::InstanceSpec>> running_;
};

TEST_F(RolloutTest, SurgesFirstSoEveryReplicaKeepsServingUntilItsReplacementIs) {
  Add("node-a", &a_);
  Add("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  Round();
  ASSERT_EQ(Get("qwen3-32b").ready_replicas(), 2);
  auto next = ReplicaSpec(2);
  next.set_max_model_len(4096);
  ASSERT_TRUE(controller_->Deploy(next, false).ok());
  int max_live = 0;
  for (int i = 0; i < 12 && !AllRun(4096); ++i) {
    Round();
    auto d = Get("qwen3-32b");
    // Room for a surge (16 devices, 3 replicas of TP 4): never fewer than N Ready.
    EXPECT_GE(d.ready_replicas(), 2) << "round " << i << ": " << d.status().message();
    max_live = std::max(max_live, Live());
  }
  Round();
  ASSERT_TRUE(AllRun(4096)) << Get("qwen3-32b").rollout_message();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.ready_replicas(), 2);
  EXPECT_EQ(d.updated_replicas(), 2);
  EXPECT_EQ(d.rollout_message(), "");
  EXPECT_EQ(max_live, 3) << "one replica more than N at most";
  // The instances the nodes run now carry the new spec.
  for (auto& [node, running] : running_) {
    for (auto& [id, spec] : running) {
      EXPECT_NE(std::find(spec.argv().begin(), spec.argv().end(), "4096"), spec.argv().end())
          << id << " on " << node;
    }
  }
  auto reasons = EventReasons("qwen3-32b");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "RolloutStarted"), 1);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "RolloutComplete"), 1);
  EXPECT_GE(std::count(reasons.begin(), reasons.end(), "RolloutStep"), 4);
  auto events = store_->ListEvents("deployment", "qwen3-32b", 0);
  for (const auto& e : *events) {
    if (e.reason == "RolloutStarted") EXPECT_THAT(e.message, HasSubstr("max_model_len"));
  }
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

TEST_F(RolloutTest, WithoutRoomForASurgeOneGoesFirstAndTheOtherKeepsServing) {
  // One node, two TP-4 replicas: all 8 devices taken, no room for a third.
  Add("node-a", &a_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  Round();
  ASSERT_EQ(Get("qwen3-32b").ready_replicas(), 2);
  auto next = ReplicaSpec(2);
  next.set_max_model_len(4096);
  ASSERT_TRUE(controller_->Deploy(next, false).ok());
  for (int i = 0; i < 16 && !AllRun(4096); ++i) {
    Round();
    EXPECT_GE(Get("qwen3-32b").ready_replicas(), 1) << "round " << i;
    EXPECT_LE(Live(), 3);
  }
  Round();
  EXPECT_TRUE(AllRun(4096));
  EXPECT_EQ(Get("qwen3-32b").ready_replicas(), 2);
  auto events = store_->ListEvents("deployment", "qwen3-32b", 0);
  bool made_room = false;
  for (const auto& e : *events) made_room |= absl::StrContains(e.message, "to make room");
  EXPECT_TRUE(made_room);
}

// dcuctl rollout restart: the same spec with a new restarted_at_ms replaces
// every replica, surging first; a Deploy that leaves it out changes nothing.
TEST_F(RolloutTest, ARestartReplacesEveryReplicaOnTheSameSpecAndARedeployDoesNot) {
  Add("node-a", &a_);
  Add("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  Round();
  ASSERT_EQ(Get("qwen3-32b").ready_replicas(), 2);
  std::set<std::string> before;
  for (auto& [node, running] : running_) {
    for (auto& [id, spec] : running) before.insert(id);
  }
  ASSERT_EQ(before.size(), 2u);

  const int64_t born = Get("qwen3-32b").status().created_at_ms();
  ASSERT_GT(born, 0);
  clock_.Advance(absl::Minutes(5));
  auto restart = Get("qwen3-32b").spec();
  restart.set_restarted_at_ms(absl::ToUnixMillis(clock_.Now()));
  auto started = controller_->Deploy(restart, false);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(started->change(), "rolling out: restart requested");
  for (int i = 0; i < 12 && !Get("qwen3-32b").rollout_message().empty(); ++i) {
    Round();
    EXPECT_GE(Get("qwen3-32b").ready_replicas(), 2) << "round " << i << ": never fewer serving";
  }
  Round();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.rollout_message(), "");
  EXPECT_EQ(d.ready_replicas(), 2);
  EXPECT_EQ(d.spec().restarted_at_ms(), restart.restarted_at_ms());
  // Every replica is new, the deployment is not: its age (and where its
  // events start) is its creation's.
  EXPECT_EQ(d.status().created_at_ms(), born);
  EXPECT_EQ(d.uid_created_at_ms(), born);
  std::set<std::string> after;
  for (auto& [node, running] : running_) {
    for (auto& [id, spec] : running) {
      after.insert(id);
      EXPECT_EQ(before.count(id), 0u) << id << " on " << node << " was not replaced";
    }
  }
  EXPECT_EQ(after.size(), 2u);
  auto events = store_->ListEvents("deployment", "qwen3-32b", 0);
  int restarts = 0;
  for (const auto& e : *events) {
    if (e.reason != "RolloutStarted") continue;
    ++restarts;
    EXPECT_THAT(e.message, ::testing::StartsWith("restart requested;")) << e.message;
  }
  EXPECT_EQ(restarts, 1);

  // The deploy that made it, again (no restarted_at_ms): nothing to do.
  auto again = controller_->Deploy(ReplicaSpec(2), false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->change(), "");
  Round();
  EXPECT_EQ(Get("qwen3-32b").rollout_message(), "");
  std::set<std::string> still;
  for (auto& [node, running] : running_) {
    for (auto& [id, spec] : running) still.insert(id);
  }
  EXPECT_EQ(still, after);
}

// dcuctl rollout undo: back to the spec before the last rollout (kept on
// every replica, the added ones too), itself a rollout; undo twice redoes.
TEST_F(RolloutTest, TheSpecBeforeTheLastRolloutIsKeptToRollBackTo) {
  Add("node-a", &a_);
  Add("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  Round();
  EXPECT_FALSE(Get("qwen3-32b").has_previous_spec()) << "no rollout yet";
  auto next = ReplicaSpec(2);
  next.set_max_model_len(4096);
  ASSERT_TRUE(controller_->Deploy(next, false).ok());
  ASSERT_TRUE(RollOutUntilAllRun(4096));
  // Every replica was replaced; the new ones carry what came before.
  auto docs = deploy_store_->ListDeployments();
  ASSERT_TRUE(docs.ok());
  for (const auto& d : *docs) {
    if (d.status().deleted()) continue;
    EXPECT_EQ(d.previous_spec().max_model_len(), 8192) << ReplicaKey(d);
  }
  auto d = Get("qwen3-32b");
  ASSERT_TRUE(d.has_previous_spec());
  auto back = d.previous_spec();
  back.set_replicas(d.spec().replicas());
  auto undo = controller_->Deploy(back, false);
  ASSERT_TRUE(undo.ok()) << undo.status();
  EXPECT_EQ(undo->change(), "rolling out: max_model_len 4096 -> 8192");
  EXPECT_TRUE(RollOutUntilAllRun(8192));
  d = Get("qwen3-32b");
  EXPECT_EQ(d.ready_replicas(), 2);
  EXPECT_EQ(d.previous_spec().max_model_len(), 4096) << "undo again would redo";
}

// dcuctl rollout history and undo --to-revision: the creation is revision
// 1 and each rollout the next, kept on every live replica (the ones a
// rollout adds too); a rollout back to a kept spec takes it out of the
// history with the next number (as kubectl's undo); at most
// kRevisionHistoryLimit earlier ones are kept.
TEST_F(RolloutTest, RevisionsAreNumberedKeptOnEveryReplicaAndMoveOnAnUndo) {
  Add("node-a", &a_);
  Add("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  Round();
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.current_revision().number(), 1);
  EXPECT_EQ(d.current_revision().change(), "created: model qwen3-32b TP=4 max_model_len=8192");
  EXPECT_GT(d.current_revision().since_ms(), 0);
  EXPECT_EQ(d.revision_history_size(), 0);
  // A scale is not a revision, and does not reword the creation's.
  ASSERT_TRUE(controller_->Scale("qwen3-32b", 3).ok());
  d = Get("qwen3-32b");
  EXPECT_EQ(d.current_revision().number(), 1);
  EXPECT_EQ(d.current_revision().change(), "created: model qwen3-32b TP=4 max_model_len=8192");
  ASSERT_TRUE(controller_->Scale("qwen3-32b", 2).ok());

  auto next = ReplicaSpec(2);
  next.set_max_model_len(4096);
  ASSERT_TRUE(controller_->Deploy(next, false).ok());
  ASSERT_TRUE(RollOutUntilAllRun(4096));
  d = Get("qwen3-32b");
  EXPECT_EQ(d.current_revision().number(), 2);
  EXPECT_EQ(d.current_revision().change(), "max_model_len 8192 -> 4096");
  ASSERT_EQ(d.revision_history_size(), 1);
  EXPECT_EQ(d.revision_history(0).number(), 1);
  EXPECT_THAT(d.revision_history(0).change(), ::testing::StartsWith("created: model qwen3-32b"));
  EXPECT_EQ(d.revision_history(0).spec().max_model_len(), 8192);
  // Both replicas were replaced by the rollout; the new documents carry it.
  auto docs = deploy_store_->ListDeployments();
  ASSERT_TRUE(docs.ok());
  int live = 0;
  for (const auto& doc : *docs) {
    if (doc.status().deleted()) continue;
    ++live;
    EXPECT_EQ(doc.current_revision().number(), 2) << ReplicaKey(doc);
    EXPECT_EQ(doc.revision_history_size(), 1) << ReplicaKey(doc);
  }
  EXPECT_EQ(live, 2);

  // Back to revision 1's spec: it is revision 3 now, and no longer listed.
  auto back = d.revision_history(0).spec();
  back.set_replicas(2);
  ASSERT_TRUE(controller_->Deploy(back, false).ok());
  d = Get("qwen3-32b");
  EXPECT_EQ(d.current_revision().number(), 3);
  ASSERT_EQ(d.revision_history_size(), 1);
  EXPECT_EQ(d.revision_history(0).number(), 2);
  EXPECT_EQ(d.revision_history(0).spec().max_model_len(), 4096);
  EXPECT_EQ(d.previous_spec().max_model_len(), 4096) << "plain undo still goes back one";

  // Twelve more rollouts (each replacing the one before it mid-way): the
  // newest ten earlier revisions are kept.
  for (int i = 0; i < 12; ++i) {
    auto s = ReplicaSpec(2);
    s.set_max_model_len(1024 + 256 * i);
    ASSERT_TRUE(controller_->Deploy(s, false).ok()) << i;
  }
  d = Get("qwen3-32b");
  EXPECT_EQ(d.current_revision().number(), 15);
  ASSERT_EQ(d.revision_history_size(), kRevisionHistoryLimit);
  EXPECT_EQ(d.revision_history(0).number(), 5);
  EXPECT_EQ(d.revision_history(kRevisionHistoryLimit - 1).number(), 14);
  EXPECT_EQ(d.revision_history(kRevisionHistoryLimit - 1).spec().max_model_len(), 1024 + 256 * 10);
}

// Changing the spec of a deployment that is stuck (here: pinned to a node
// that does not exist) is how a user fixes it. Its only replica is not
// Ready, so the rollout removes it first; before, nothing was added with it,
// the pass forgot the removed replica and the deployment was gone
// ("Deleted: all instances stopped") instead of fixed.
TEST_F(RolloutTest, FixingTheSpecOfAStuckDeploymentNeverLosesIt) {
  Add("node-a", &a_);
  auto stuck = ReplicaSpec(1);
  stuck.set_node("node-c");
  ASSERT_TRUE(controller_->Deploy(stuck, false).ok());
  Round();
  ASSERT_EQ(Get("qwen3-32b").status().phase(), dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
  auto fixed = ReplicaSpec(1);
  ASSERT_TRUE(controller_->Deploy(fixed, false).ok());
  for (int i = 0; i < 8; ++i) {
    Round();
    ASSERT_TRUE(controller_->Get("qwen3-32b").ok()) << "round " << i << ": the deployment is gone";
  }
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_READY) << d.status().message();
  EXPECT_EQ(d.ready_replicas(), 1);
  EXPECT_EQ(d.rollout_message(), "");
  auto reasons = EventReasons("qwen3-32b");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "Deleted"), 0);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "RolloutComplete"), 1);
  EXPECT_EQ(Live(), 1);
}

TEST_F(RolloutTest, ANewSpecThatNeverServesStallsWhileTheOldReplicasServe) {
  Add("node-a", &a_);
  Add("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  Round();
  auto next = ReplicaSpec(2);
  next.set_max_model_len(4096);
  ASSERT_TRUE(controller_->Deploy(next, false).ok());
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(absl::Minutes(10));  // past every back-off
    Round("4096");
  }
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.ready_replicas(), 2) << "the old replicas keep serving";
  EXPECT_EQ(d.updated_replicas(), 1) << "one replica on the new spec at a time";
  EXPECT_THAT(d.rollout_message(), HasSubstr("rolling out"));
}

TEST_F(RolloutTest, GoesOnAfterAControllerRestart) {
  Add("node-a", &a_);
  Add("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(2), false).ok());
  Round();
  auto next = ReplicaSpec(2);
  next.set_max_model_len(4096);
  ASSERT_TRUE(controller_->Deploy(next, false).ok());
  Round();
  MakeController();
  EXPECT_TRUE(RollOutUntilAllRun(4096));
  EXPECT_EQ(Get("qwen3-32b").ready_replicas(), 2);
  ExpectAssignedMatchesTheDocuments({"node-a", "node-b"});
}

// Issue 20: a node whose batch job nears its end drains; its replicas move
// make-before-break.
class DrainTest : public RolloutTest {
 protected:
  // The agent of `node` reports that it drains, with what it runs.
  void Drain(const std::string& node) {
    dcufleet::v1::NodeStatus st;
    st.mutable_drain()->set_reason("slurm job '12' ends at 2026-12-02 21:40:00 UTC (time limit)");
    st.mutable_drain()->set_deadline_ms(absl::ToUnixMillis(clock_.Now() + absl::Minutes(9)));
    for (const auto& [id, spec] : running_[node]) {
      auto* i = st.add_instances();
      i->set_instance_id(id);
      i->set_phase(dcufleet::v1::INSTANCE_READY);
      i->set_port(spec.port());
    }
    ASSERT_TRUE(fleet_->OnStatus(node, st, nodes_[node]).ok());
  }
  // Live replicas and the node each runs on.
  std::map<int, std::string> Placed() {
    std::map<int, std::string> out;
    const auto d = Get("qwen3-32b");  // held: a range-for over a temporary's member dangles
    for (const auto& r : d.replicas()) {
      if (r.phase() != dcufleet::v1::DEPLOYMENT_DELETING) out[r.index()] = r.node();
    }
    return out;
  }
};

// The same on a draining node: the only replica, still starting there, is
// replaced elsewhere, never just removed.
TEST_F(DrainTest, TheOnlyReplicaNotReadyOnADrainingNodeIsReplacedNotLost) {
  Add("node-a", &a_);
  Add("node-b", &b_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(1), false).ok());
  controller_->ReconcileOnceForTest();  // placed, not yet Ready
  const std::string node = Placed().begin()->second;
  ASSERT_FALSE(node.empty());
  Drain(node);
  for (int i = 0; i < 8; ++i) {
    Round();
    ASSERT_TRUE(controller_->Get("qwen3-32b").ok()) << "round " << i << ": the deployment is gone";
  }
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.ready_replicas(), 1) << d.status().message();
  EXPECT_NE(Placed().begin()->second, node);
  auto reasons = EventReasons("qwen3-32b");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "Deleted"), 0);
}

TEST_F(DrainTest, AReplicaLeavesADrainingNodeOnlyOnceItsReplacementIsReady) {
  Add("node-a", &a_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(1), false).ok());
  Round();
  ASSERT_EQ(Get("qwen3-32b").ready_replicas(), 1);
  Add("node-b", &b_);
  Drain("node-a");
  EXPECT_EQ(fleet_->DrainingNodes(), std::vector<std::string>{"node-a"});
  int max_live = 0;
  bool unserved_seen = false;
  for (int i = 0; i < 8; ++i) {
    Round();
    clock_.Advance(absl::Seconds(1));
    auto d = Get("qwen3-32b");
    EXPECT_GE(d.ready_replicas(), 1) << "round " << i << ": never a gap";
    // The gateway is never left without a replica in rotation.
    auto view = ServingSnapshotOf({d}, {});
    ASSERT_EQ(view.models_size(), 1);
    int in_rotation = 0;
    for (const auto& r : view.models(0).replicas()) in_rotation += r.ready();
    EXPECT_GE(in_rotation, 1) << "round " << i;
    for (const auto& r : d.replicas()) {
      if (r.unserved()) {
        unserved_seen = true;
        EXPECT_EQ(r.node(), "node-a");
        EXPECT_EQ(in_rotation, 1) << "the unserved one gets no new requests";
      }
    }
    max_live = std::max(max_live, Live());
  }
  EXPECT_TRUE(unserved_seen) << "out of rotation before it stops";
  auto placed = Placed();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed.begin()->second, "node-b");
  EXPECT_EQ(Get("qwen3-32b").ready_replicas(), 1);
  EXPECT_TRUE(running_["node-a"].empty()) << "the drained node runs nothing";
  EXPECT_TRUE(Ids(a_).empty());
  EXPECT_EQ(max_live, 2) << "one replacement at a time";
  auto reasons = EventReasons("qwen3-32b");
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "ReplicaMoved"), 3)
      << "a replacement added, the old one out of rotation, then removed";
  // Nothing new goes to a draining node, and the reason says why.
  auto other = ReplicaSpec(1);
  other.set_name("second");
  other.set_node("node-a");
  ASSERT_TRUE(controller_->Deploy(other, false).ok());
  Round();
  EXPECT_THAT(Get("second").status().message(), HasSubstr("node is draining (slurm job '12'"));
}

// dcuctl cordon / drain: a person's drain moves replicas as an agent's
// does (make-before-break); a cordon alone keeps what runs and places nothing
// new, saying why; uncordon takes replicas again.
TEST_F(DrainTest, APersonsDrainMovesReplicasAndACordonPlacesNothingNew) {
  Add("node-a", &a_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(1), false).ok());
  Round();
  ASSERT_EQ(Get("qwen3-32b").ready_replicas(), 1);
  Add("node-b", &b_);
  // Cordoned: the replica stays; a deployment pinned there is refused.
  dcufleet::v1::NodeCordon cordon;
  cordon.set_reason("firmware update");
  ASSERT_TRUE(fleet_->SetCordon("node-a", cordon).ok());
  auto pinned = ReplicaSpec(1);
  pinned.set_name("pinned");
  pinned.set_node("node-a");
  ASSERT_TRUE(controller_->Deploy(pinned, false).ok());
  for (int i = 0; i < 3; ++i) Round();
  EXPECT_EQ(Placed(), (std::map<int, std::string>{{0, "node-a"}})) << "a cordon moves nothing";
  EXPECT_THAT(Get("pinned").status().message(),
              HasSubstr("node is cordoned (firmware update); dcuctl uncordon node-a takes replicas there again"));
  // Drained: moved to node-b once its replacement is Ready.
  cordon.set_drain(true);
  ASSERT_TRUE(fleet_->SetCordon("node-a", cordon).ok());
  for (int i = 0; i < 8; ++i) {
    Round();
    clock_.Advance(absl::Seconds(1));
    EXPECT_GE(Get("qwen3-32b").ready_replicas(), 1) << "round " << i << ": never a gap";
  }
  auto placed = Placed();  // the replacement has the next index
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed.begin()->second, "node-b");
  EXPECT_TRUE(running_["node-a"].empty()) << "the drained node runs nothing";
  // Uncordoned: the pinned deployment is placed there.
  ASSERT_TRUE(fleet_->SetCordon("node-a", std::nullopt).ok());
  for (int i = 0; i < 3; ++i) Round();
  EXPECT_EQ(Get("pinned").ready_replicas(), 1) << Get("pinned").status().message();
}

TEST_F(DrainTest, WithoutRoomElsewhereTheReplicaServesUntilTheNodeLeaves) {
  Add("node-a", &a_);
  ASSERT_TRUE(controller_->Deploy(ReplicaSpec(1), false).ok());
  Round();
  Drain("node-a");
  for (int i = 0; i < 5; ++i) {
    Round();
    EXPECT_EQ(Get("qwen3-32b").ready_replicas(), 1) << "round " << i << ": the old one serves";
  }
  EXPECT_EQ(Live(), 2) << "a replacement waits for room";
  // It serves as asked: Ready, the replacement waiting named in the message
  // (it once read Unschedulable, the waiting replacement's phase).
  auto shown = Get("qwen3-32b");
  EXPECT_EQ(shown.status().phase(), dcufleet::v1::DEPLOYMENT_READY) << shown.DebugString();
  EXPECT_THAT(shown.status().message(), HasSubstr("1 of 1 replicas Ready; replica 1: "));
  EXPECT_EQ(running_["node-a"].size(), 1u);
  // The job's end: the agent says Goodbye; a new node comes.
  fleet_->OnGoodbye("node-a", "drain deadline reached", &a_);
  nodes_.erase("node-a");
  running_.erase("node-a");
  EXPECT_TRUE(fleet_->DrainingNodes().empty()) << "a Lost node has left, it does not drain";
  Add("node-b", &b_);
  for (int i = 0; i < 8; ++i) Round();
  auto placed = Placed();
  ASSERT_EQ(placed.size(), 1u) << "the replacement and the rescheduled replica: one stays";
  EXPECT_EQ(placed.begin()->second, "node-b");
  EXPECT_EQ(Get("qwen3-32b").ready_replicas(), 1);
  EXPECT_EQ(running_["node-b"].size(), 1u);
}

TEST(EvacuationStepTest, OneChangeAtATime) {
  auto doc = [](int index, const std::string& node, dcufleet::v1::DeploymentPhase phase) {
    dcufleet::v1::Deployment d;
    d.mutable_spec()->set_name("m");
    d.mutable_spec()->set_replicas(2);
    d.set_replica(index);
    d.mutable_status()->set_phase(phase);
    if (!node.empty()) d.mutable_status()->add_attempts()->mutable_placement()->set_node(node);
    return d;
  };
  using dcufleet::v1::DEPLOYMENT_READY;
  const std::set<std::string> draining = {"x"};
  constexpr int64_t kNow = 1'000'000;
  const absl::Duration kDrain = absl::Seconds(10);
  auto a = doc(0, "x", DEPLOYMENT_READY), b = doc(1, "y", DEPLOYMENT_READY);
  auto step = NextEvacuationStep({&a, &b}, draining, kNow, kDrain);
  EXPECT_EQ(step.add, 2) << step.why;
  EXPECT_THAT(step.why, HasSubstr("replace replica 0 on draining node 'x'"));
  // The replacement starting: wait.
  auto c = doc(2, "", dcufleet::v1::DEPLOYMENT_PENDING);
  step = NextEvacuationStep({&a, &b, &c}, draining, kNow, kDrain);
  EXPECT_EQ(step.add + step.remove, -2);
  EXPECT_FALSE(step.done);
  // Ready: the old one leaves the rotation, and goes once the drain is over.
  c = doc(2, "z", DEPLOYMENT_READY);
  step = NextEvacuationStep({&a, &b, &c}, draining, kNow, kDrain);
  EXPECT_EQ(step.unserve, 0);
  EXPECT_EQ(step.remove, -1);
  a.mutable_status()->set_unserved_at_ms(kNow);
  step = NextEvacuationStep({&a, &b, &c}, draining, kNow + 9'999, kDrain);
  EXPECT_EQ(step.unserve + step.remove, -2) << "its requests in flight still finish";
  step = NextEvacuationStep({&a, &b, &c}, draining, kNow + 10'000, kDrain);
  EXPECT_EQ(step.remove, 0);
  // While it is removed: nothing.
  a.mutable_status()->set_deleted(true);
  step = NextEvacuationStep({&a, &b, &c}, draining, kNow, kDrain);
  EXPECT_EQ(step.add + step.remove, -2);
  EXPECT_FALSE(step.done);
  // Gone: done.
  step = NextEvacuationStep({&b, &c}, draining, kNow, kDrain);
  EXPECT_TRUE(step.done);
  // Not Ready on a draining node serves nobody: it goes first.
  auto d = doc(0, "x", dcufleet::v1::DEPLOYMENT_BACKOFF);
  step = NextEvacuationStep({&d, &b}, draining, kNow, kDrain);
  EXPECT_EQ(step.remove, 0);
  EXPECT_EQ(step.add, -1);
  // ... the only replica: its replacement with it, never none.
  auto lone = doc(0, "x", dcufleet::v1::DEPLOYMENT_LAUNCHING);
  lone.mutable_spec()->set_replicas(1);
  step = NextEvacuationStep({&lone}, draining, kNow, kDrain);
  EXPECT_EQ(step.remove, 0);
  EXPECT_EQ(step.add, 1) << step.why;
  // An attempt that ended is on no node.
  auto e = doc(0, "x", DEPLOYMENT_READY);
  e.mutable_status()->mutable_attempts(0)->set_ended_at_ms(5);
  EXPECT_TRUE(NextEvacuationStep({&e, &b}, draining, kNow, kDrain).done);
  // Both on draining nodes: one replacement Ready is enough to lose one.
  auto f = doc(0, "x", DEPLOYMENT_READY), g = doc(1, "x", DEPLOYMENT_READY);
  auto h = doc(2, "z", DEPLOYMENT_READY);
  step = NextEvacuationStep({&f, &g, &h}, draining, kNow, kDrain);
  EXPECT_EQ(step.unserve, 0);
  // Nothing left on a draining node but one too many live: the worst goes.
  auto i = doc(0, "y", DEPLOYMENT_READY), j = doc(1, "z", DEPLOYMENT_READY);
  auto k = doc(2, "", dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
  step = NextEvacuationStep({&i, &j, &k}, draining, kNow, kDrain);
  EXPECT_EQ(step.remove, 2);
  EXPECT_THAT(step.why, HasSubstr("nothing is left on a draining node"));
  // Scaled to zero with its instance still stopping on a draining node:
  // nothing to move (a replacement would start what was scaled away).
  auto parked = ParkedReplica(doc(0, "x", DEPLOYMENT_READY), kNow);
  step = NextEvacuationStep({&parked}, draining, kNow, kDrain);
  EXPECT_TRUE(step.done);
  EXPECT_EQ(step.add, -1) << step.why;
}

TEST(RolloutStepTest, OneChangeAtATime) {
  auto doc = [](int index, int len, dcufleet::v1::DeploymentPhase phase, bool deleted = false) {
    dcufleet::v1::Deployment d;
    d.mutable_spec()->set_name("m");
    d.mutable_spec()->set_replicas(2);
    d.mutable_spec()->set_max_model_len(len);
    d.mutable_target_spec()->set_name("m");
    d.mutable_target_spec()->set_replicas(2);
    d.mutable_target_spec()->set_max_model_len(8);
    d.set_replica(index);
    d.mutable_status()->set_phase(phase);
    d.mutable_status()->set_deleted(deleted);
    return d;
  };
  using dcufleet::v1::DEPLOYMENT_READY;
  auto target = doc(0, 8, DEPLOYMENT_READY).target_spec();
  auto a = doc(0, 4, DEPLOYMENT_READY), b = doc(1, 4, DEPLOYMENT_READY);
  // All old and Ready: surge with the lowest free index.
  auto step = NextRolloutStep({&a, &b}, target);
  EXPECT_EQ(step.add, 2);
  EXPECT_EQ(step.remove, -1);
  // The new one starting: wait.
  auto c = doc(2, 8, dcufleet::v1::DEPLOYMENT_LAUNCHING);
  step = NextRolloutStep({&a, &b, &c}, target);
  EXPECT_EQ(step.add, -1);
  EXPECT_EQ(step.remove, -1);
  // Ready: one old goes (the highest index on equal footing).
  c.mutable_status()->set_phase(DEPLOYMENT_READY);
  step = NextRolloutStep({&a, &b, &c}, target);
  EXPECT_EQ(step.remove, 1);
  // While it is being removed: nothing.
  b.mutable_status()->set_deleted(true);
  step = NextRolloutStep({&a, &b, &c}, target);
  EXPECT_EQ(step.add + step.remove, -2);
  // Unschedulable new replica: an old one goes to make room.
  auto a2 = doc(0, 4, DEPLOYMENT_READY), b2 = doc(1, 4, DEPLOYMENT_READY);
  auto c2 = doc(2, 8, dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
  // ... not when it has no usable plan at all: removing one would lose it.
  step = NextRolloutStep({&a2, &b2, &c2}, target);
  EXPECT_EQ(step.add + step.remove, -2);
  c2.mutable_status()->add_plans()->set_stack_id("vllm-0.9.2-bare");
  step = NextRolloutStep({&a2, &b2, &c2}, target);
  EXPECT_EQ(step.remove, 1);
  EXPECT_THAT(step.why, HasSubstr("make room"));
  // An old replica that is not Ready goes first.
  auto a3 = doc(0, 4, dcufleet::v1::DEPLOYMENT_BACKOFF), b3 = doc(1, 4, DEPLOYMENT_READY);
  step = NextRolloutStep({&a3, &b3}, target);
  EXPECT_EQ(step.remove, 0);
  EXPECT_EQ(step.add, -1);
  // ... and when it is the only one, its replacement comes with it: a
  // deployment is never left without a replica.
  auto only = doc(0, 4, dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
  only.mutable_spec()->set_replicas(1);
  auto target1 = target;
  target1.set_replicas(1);
  step = NextRolloutStep({&only}, target1);
  EXPECT_EQ(step.remove, 0);
  EXPECT_EQ(step.add, 1) << step.why;
  EXPECT_THAT(step.why, HasSubstr("replica 1 added on the new spec in the same step"));
  // All new but one short (removed before its replacement came): top up.
  auto a4 = doc(0, 8, DEPLOYMENT_READY);
  step = NextRolloutStep({&a4}, target);
  EXPECT_EQ(step.add, 1);
  // Done: nothing.
  auto b4 = doc(1, 8, DEPLOYMENT_READY);
  step = NextRolloutStep({&a4, &b4}, target);
  EXPECT_EQ(step.add + step.remove, -2);
  EXPECT_EQ(SpecChanges(a.spec(), target), "max_model_len 4 -> 8");
  // Unset pins read as what they mean.
  dcufleet::v1::DeploymentSpec pinned = target, unpinned = target;
  pinned.set_tp(4);
  pinned.set_node("node-a");
  EXPECT_EQ(SpecChanges(pinned, unpinned), "tp 4 -> auto, node \"node-a\" -> any");
  EXPECT_EQ(SpecChanges(unpinned, pinned), "tp auto -> 4, node any -> \"node-a\"");
}


// Issue 20: a replica that fits no registered node asks the Slurm pool;
// the job's node is placed on once its agent says Hello; the job goes
// when the deployment does; a job that ends makes its node Lost and the
// replica is rescheduled through a new job.
class DeployPoolTest : public DeployControllerTest {
 protected:
  void SetUp() override {
    DeployControllerTest::SetUp();
    dcufleet::v1::SlurmPoolConfig c;
    c.set_name("hpc");
    c.set_partition("dcu");
    c.add_agent_argv("dcu-agent");
    c.set_resubmit_after_ms(1000);
    c.set_max_devices_per_job(4);
    auto p = NodePool::Create(c, &slurm_, &clock_);
    ASSERT_TRUE(p.ok()) << p.status();
    pool_ = std::move(*p);
    pool_->SetDefaultControllerAddress("ctl:7070");
    pool_->SetOnJobEnded([this](const std::string& id, const std::string& why) {
      fleet_->OnAllocationEnded(id, why);
    });
    controller_->SetPools({pool_.get()});
  }
  void TearDown() override { controller_->SetPools({}); }
  // The job's agent says Hello with its allocation.
  void JobNodeHello(const std::string& job, RecordingSession* s, int devices = 4) {
    auto h = MakeHello("hpc-" + job, "gfx928", devices, 64 * kGiB, 63 * kGiB);
    auto* a = h.mutable_inventory()->mutable_allocation();
    a->set_scheduler("slurm");
    a->set_job_id(job);
    ASSERT_TRUE(fleet_->OnHello(h, s).ok());
  }
  // A reconcile pass, two polls of the queue (the first submits, the
  // second reads what Slurm says of it), another pass.
  void Pass() {
    controller_->ReconcileOnceForTest();
    pool_->SyncOnce();
    pool_->SyncOnce();
    controller_->ReconcileOnceForTest();
  }
  FakeBatchScheduler slurm_;
  std::unique_ptr<NodePool> pool_;
};

TEST_F(DeployPoolTest, FitsNoNodeSoAJobIsSubmittedPlacedOnItsNodeAndCancelledOnDelete) {
  RecordingSession small;
  Connect("node-a", &small, "gfx928", /*devices=*/2);
  slurm_.set_pending_reason("Resources");
  ASSERT_TRUE(controller_->Deploy(Spec(4), false).ok());
  Pass();
  ASSERT_EQ(slurm_.requests().size(), 1u);
  EXPECT_EQ(slurm_.requests()[0].gres_count, 4);
  EXPECT_EQ(slurm_.requests()[0].comment, "qwen3-32b");
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_PENDING);
  EXPECT_THAT(d.status().message(), HasSubstr("pool 'hpc': slurm job 100 PENDING (Resources)"));
  EXPECT_THAT(d.status().message(), HasSubstr("node-a: "));
  Pass();
  EXPECT_EQ(slurm_.requests().size(), 1u) << "one job per replica";

  slurm_.Run("100", "n1");
  Pass();
  EXPECT_THAT(Get("qwen3-32b").status().message(), HasSubstr("RUNNING on n1, waiting for node 'hpc-100'"));
  RecordingSession job;
  JobNodeHello("100", &job);
  Pass();
  d = Get("qwen3-32b");
  ASSERT_EQ(d.status().attempts_size(), 1);
  EXPECT_EQ(d.status().attempts(0).placement().node(), "hpc-100");
  Pass();
  EXPECT_TRUE(slurm_.cancelled().empty()) << "its node runs the replica";

  ASSERT_TRUE(controller_->Delete("qwen3-32b").ok());
  Pass();
  EXPECT_THAT(slurm_.cancelled(), ::testing::ElementsAre("100"));
}

TEST_F(DeployPoolTest, AJobThatEndsLosesItsNodeAtOnceAndTheReplicaGetsANewJob) {
  ASSERT_TRUE(controller_->Deploy(Spec(4), false).ok());
  Pass();
  slurm_.Run("100", "n1");
  RecordingSession job;
  JobNodeHello("100", &job);
  Pass();
  auto inst = job.last().instances(0);
  Report("hpc-100", &job, inst, dcufleet::v1::INSTANCE_READY);
  Pass();
  ASSERT_EQ(Get("qwen3-32b").status().phase(), dcufleet::v1::DEPLOYMENT_READY);

  // scancel from outside: squeue says CANCELLED; no heartbeat timeout.
  slurm_.End("100", "CANCELLED");
  Pass();
  EXPECT_EQ(fleet_->GetNode("hpc-100")->state(), dcufleet::v1::NODE_LOST);
  EXPECT_THAT(fleet_->GetNode("hpc-100")->state_reason(), HasSubstr("slurm job '100' ended (CANCELLED)"));
  auto d = Get("qwen3-32b");
  EXPECT_EQ(d.status().phase(), dcufleet::v1::DEPLOYMENT_PENDING);
  EXPECT_EQ(slurm_.requests().size(), 1u) << "not within resubmit_after";
  clock_.Advance(absl::Seconds(2));
  Pass();
  ASSERT_EQ(slurm_.requests().size(), 2u);
  EXPECT_THAT(Get("qwen3-32b").status().message(), HasSubstr("slurm job 101 PENDING"));
}

TEST_F(DeployPoolTest, APlacementOnTheFleetCancelsThePendingJob) {
  ASSERT_TRUE(controller_->Deploy(Spec(4), false).ok());
  Pass();
  ASSERT_EQ(slurm_.requests().size(), 1u);
  RecordingSession a;
  Connect("node-a", &a);
  Pass();
  EXPECT_EQ(Get("qwen3-32b").status().attempts(0).placement().node(), "node-a");
  EXPECT_THAT(slurm_.cancelled(), ::testing::ElementsAre("100"));
}

// Scaled to zero, a deployment waits for nothing: its pending job is
// cancelled and no other is submitted.
TEST_F(DeployPoolTest, ScaledToZeroGivesUpItsPendingJob) {
  ASSERT_TRUE(controller_->Deploy(Spec(4), false).ok());
  Pass();
  ASSERT_EQ(slurm_.requests().size(), 1u);
  ASSERT_TRUE(controller_->Scale("qwen3-32b", 0).ok());
  Pass();
  Pass();
  EXPECT_THAT(slurm_.cancelled(), ::testing::ElementsAre("100"));
  EXPECT_EQ(slurm_.requests().size(), 1u);
  EXPECT_EQ(Get("qwen3-32b").status().phase(), dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO);
}

TEST_F(DeployPoolTest, MoreDevicesThanAJobMayHaveStaysUnschedulable) {
  ASSERT_TRUE(controller_->Deploy(Spec(8), false).ok());
  Pass();
  EXPECT_TRUE(slurm_.requests().empty());
  EXPECT_EQ(Get("qwen3-32b").status().phase(), dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE);
}


// Forwards to the real store; a PutDeployments can be held at the door (the
// writer's, to let others queue behind it; the pass's, to let a delete
// come while it writes) or refused once, and every call is recorded with
// its calling thread and documents.
class GatedDeploymentStore : public DeploymentStore {
 public:
  explicit GatedDeploymentStore(DeploymentStore* inner) : inner_(inner) {}
  struct Call {
    std::thread::id thread;
    std::vector<std::string> keys;
    bool all_deleted = true;
  };
  // Holds the next call that writes exactly `key`, marked deleted (the
  // reconcile pass writes other documents meanwhile, on its own thread).
  void HoldNextDelete(const std::string& key) {
    absl::MutexLock lock(&mu_);
    hold_key_ = key;
    hold_placement_ = false;
  }
  // Holds the next call that writes `key` placed (live, with an attempt).
  void HoldNextPlacement(const std::string& key) {
    absl::MutexLock lock(&mu_);
    hold_key_ = key;
    hold_placement_ = true;
  }
  void FailNext() {
    absl::MutexLock lock(&mu_);
    fail_next_ = true;
  }
  absl::Notification held;     // the held call has arrived
  absl::Notification released;  // ... and may go on
  std::thread::id held_thread() {
    absl::MutexLock lock(&mu_);
    return held_thread_;
  }
  std::vector<Call> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  absl::Status PutDeployment(const dcufleet::v1::Deployment& d) override {
    return PutDeployments({d});
  }
  absl::Status PutDeployments(const std::vector<dcufleet::v1::Deployment>& docs) override {
    bool hold = false, fail = false;
    {
      absl::MutexLock lock(&mu_);
      Call c;
      c.thread = std::this_thread::get_id();
      bool places = false;
      for (const auto& d : docs) {
        c.keys.push_back(ReplicaKey(d));
        c.all_deleted = c.all_deleted && d.status().deleted();
        places = places || (ReplicaKey(d) == hold_key_ && !d.status().deleted() &&
                            d.status().attempts_size() > 0);
      }
      hold = !hold_key_.empty() &&
             (hold_placement_ ? places
                              : c.all_deleted && c.keys == std::vector<std::string>{hold_key_});
      if (hold) hold_key_.clear();
      calls_.push_back(std::move(c));
      std::swap(fail, fail_next_);
      if (hold) held_thread_ = std::this_thread::get_id();
    }
    if (hold) {
      held.Notify();
      released.WaitForNotification();
    }
    if (fail) return absl::UnavailableError("disk gone (test)");
    return inner_->PutDeployments(docs);
  }
  absl::Status DeleteDeployments(const std::vector<std::string>& keys) override {
    return inner_->DeleteDeployments(keys);
  }
  absl::StatusOr<std::vector<dcufleet::v1::Deployment>> ListDeployments() override {
    return inner_->ListDeployments();
  }
  absl::Status PutNodeGeneration(const std::string& node, int64_t generation) override {
    return inner_->PutNodeGeneration(node, generation);
  }
  absl::Status PutNodeGenerations(const std::vector<std::pair<std::string, int64_t>>& g) override {
    return inner_->PutNodeGenerations(g);
  }
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ListNodeGenerations() override {
    return inner_->ListNodeGenerations();
  }

 private:
  DeploymentStore* const inner_;
  absl::Mutex mu_;
  std::string hold_key_ ABSL_GUARDED_BY(mu_);
  bool hold_placement_ ABSL_GUARDED_BY(mu_) = false;
  bool fail_next_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id held_thread_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
};

// A bulk delete was two transactions per deployment, each on the calling
// (gRPC) thread. Deletes that arrive while the writer commits go together
// in its next transaction, and each is answered only once it is durable.
TEST_F(DeployControllerTest, DeletesArrivingTogetherCommitInOneTransaction) {
  GatedDeploymentStore gated(deploy_store_.get());
  MakeController(&gated, absl::Milliseconds(20));
  controller_->Start();
  constexpr int kCount = 10;
  for (int i = 0; i < kCount; ++i) {
    auto spec = Spec();
    spec.set_name(absl::StrCat("d", i));
    ASSERT_TRUE(controller_->Deploy(spec, false).ok());
  }
  // No node: the passes make them Unschedulable meanwhile, on their own
  // thread, in the same order of document writes as the deletes.
  absl::Mutex mu;
  std::vector<absl::StatusOr<dcufleet::v1::Deployment>> answers;
  auto record = [&](absl::StatusOr<dcufleet::v1::Deployment> r) {
    absl::MutexLock lock(&mu);
    answers.push_back(std::move(r));
  };
  gated.HoldNextDelete("d0");
  controller_->DeleteAsync("d0", record);
  gated.held.WaitForNotification();  // the writer is in its transaction for d0
  for (int i = 1; i < kCount; ++i) controller_->DeleteAsync(absl::StrCat("d", i), record);
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(answers.empty()) << "answered before its delete was durable";
  }
  gated.released.Notify();
  {
    absl::MutexLock lock(&mu);
    auto all = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return answers.size() == kCount; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30)));
    for (const auto& a : answers) {
      ASSERT_TRUE(a.ok()) << a.status();
      EXPECT_TRUE(a->status().deleted());
    }
  }
  controller_->Stop();
  // The writer's calls from the held one on: d0 alone, then the nine that
  // queued behind it, together.
  std::vector<GatedDeploymentStore::Call> writer;
  bool from_held = false;
  for (const auto& c : gated.calls()) {
    from_held = from_held || (c.thread == gated.held_thread() && c.all_deleted &&
                              c.keys == std::vector<std::string>{"d0"});
    if (from_held && c.thread == gated.held_thread()) writer.push_back(c);
  }
  ASSERT_EQ(writer.size(), 2u);
  EXPECT_TRUE(writer[1].all_deleted);
  std::set<std::string> together(writer[1].keys.begin(), writer[1].keys.end());
  std::set<std::string> expected;
  for (int i = 1; i < kCount; ++i) expected.insert(absl::StrCat("d", i));
  EXPECT_EQ(together, expected);
  // Durable: the stored documents are marked, and each delete left its event.
  auto stored = deploy_store_->ListDeployments();
  ASSERT_TRUE(stored.ok());
  for (const auto& d : *stored) EXPECT_TRUE(d.status().deleted()) << d.spec().name();
  for (int i = 0; i < kCount; ++i) {
    EXPECT_THAT(EventReasons(absl::StrCat("d", i)), ::testing::Contains("Deleting")) << i;
  }
}

// A scale, and a Deploy that changes only --replicas, wait for the store on
// the writer thread, in their turn behind the writes queued before them;
// the calling (gRPC) thread goes back at once.
TEST_F(DeployControllerTest, AScaleIsMadeByTheWriterInItsTurn) {
  GatedDeploymentStore gated(deploy_store_.get());
  MakeController(&gated, absl::Milliseconds(20));
  controller_->Start();
  for (const char* name : {"d0", "d1"}) {
    auto spec = Spec();
    spec.set_name(name);
    ASSERT_TRUE(controller_->Deploy(spec, false).ok());
  }
  auto release = absl::MakeCleanup([&] {
    if (!gated.released.HasBeenNotified()) gated.released.Notify();
    controller_->Stop();
  });
  gated.HoldNextDelete("d0");
  controller_->DeleteAsync("d0", [](absl::StatusOr<dcufleet::v1::Deployment>) {});
  gated.held.WaitForNotification();  // the writer is in d0's transaction
  absl::Notification scaled, applied;
  absl::StatusOr<dcufleet::v1::ScaleDeploymentResponse> scale_answer;
  absl::StatusOr<dcufleet::v1::DeployResponse> deploy_answer;
  std::thread::id scale_thread, deploy_thread;
  controller_->ScaleAsync("d1", 2, [&](absl::StatusOr<dcufleet::v1::ScaleDeploymentResponse> r) {
    scale_answer = std::move(r);
    scale_thread = std::this_thread::get_id();
    scaled.Notify();
  });
  auto three = Spec();
  three.set_name("d1");
  three.set_replicas(3);
  controller_->DeployAsync(three, false, [&](absl::StatusOr<dcufleet::v1::DeployResponse> r) {
    deploy_answer = std::move(r);
    deploy_thread = std::this_thread::get_id();
    applied.Notify();
  });
  EXPECT_FALSE(scaled.HasBeenNotified()) << "the scale did not wait for the writes before it";
  EXPECT_FALSE(applied.HasBeenNotified());
  gated.released.Notify();
  ASSERT_TRUE(scaled.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(applied.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(scale_thread, gated.held_thread()) << "not answered by the writer";
  EXPECT_EQ(deploy_thread, gated.held_thread());
  ASSERT_TRUE(scale_answer.ok()) << scale_answer.status();
  EXPECT_THAT(scale_answer->added(), ::testing::ElementsAre(1));
  ASSERT_TRUE(deploy_answer.ok()) << deploy_answer.status();
  EXPECT_FALSE(deploy_answer->created());
  EXPECT_EQ(deploy_answer->change(), "scaled to 3 replicas");
  EXPECT_EQ(Get("d1").spec().replicas(), 3);
  auto d0 = controller_->Get("d0");  // deleted, or already forgotten
  if (d0.ok()) EXPECT_TRUE(d0->status().deleted());
}

// A delete the store refused is answered with the store's error and changes
// nothing: the deployment still serves, and a retry deletes it.
TEST_F(DeployControllerTest, ARefusedDeleteChangesNothing) {
  GatedDeploymentStore gated(deploy_store_.get());
  MakeController(&gated);
  RecordingSession a;
  auto inst = ServingOnNodeA(&a);
  gated.FailNext();
  auto refused = controller_->Delete("qwen3-32b");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("disk gone"));
  EXPECT_FALSE(Get("qwen3-32b").status().deleted());
  EXPECT_THAT(EventReasons("qwen3-32b"), ::testing::Not(::testing::Contains("Deleting")));
  controller_->ReconcileOnceForTest();
  ASSERT_EQ(a.last().instances_size(), 1) << "a refused delete stopped the instance";
  ASSERT_TRUE(controller_->Delete("qwen3-32b").ok());
  controller_->ReconcileOnceForTest();
  EXPECT_EQ(a.last().instances_size(), 0);
}


// What a node was last sent, safe to read while the reconcile thread sends.
class LockedSession : public NodeSession {
 public:
  bool Send(ControllerMessage m) override {
    ControllerMessage wire;  // as the agent reads it (assignment_wire.h)
    EXPECT_TRUE(wire.ParseFromString(m.SerializeAsString()));
    absl::MutexLock lock(&mu_);
    if (wire.has_assignment()) {
      last_instances_ = wire.assignment().instances_size();
      most_instances_ = std::max(most_instances_, last_instances_);
    }
    return true;
  }
  int most_instances() {
    absl::MutexLock lock(&mu_);
    return most_instances_;
  }
  std::string Peer() const override { return "test"; }
  bool AwaitInstances(int n) {
    absl::MutexLock lock(&mu_);
    auto seen = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return last_instances_ == n; };
    return mu_.AwaitWithTimeout(absl::Condition(&seen), absl::Seconds(30));
  }

 private:
  absl::Mutex mu_;
  int last_instances_ ABSL_GUARDED_BY(mu_) = -1;
  int most_instances_ ABSL_GUARDED_BY(mu_) = 0;
};

// A pass steps copies and writes them later; a delete that came meanwhile
// must end up last in the store. The pass used to write first and check
// after, so its placed (older) version could land after the delete's
// marked one, and a controller killed before the next pass loaded the
// deployment undeleted. The pass now checks and writes in the order of
// document writes, which the delete waits for.
TEST_F(DeployControllerTest, APassNeverWritesAnOlderVersionOverADelete) {
  LockedSession a;
  GatedDeploymentStore gated(deploy_store_.get());
  MakeController(&gated);  // the test runs the passes
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", "gfx928", 8, 64 * kGiB, 63 * kGiB), &a).ok());
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());
  gated.HoldNextPlacement("qwen3-32b");
  std::thread pass([&] { controller_->ReconcileOnceForTest(); });
  absl::Notification deleted;
  absl::StatusOr<dcufleet::v1::Deployment> answer;
  std::thread del;
  auto join = absl::MakeCleanup([&] {
    if (!gated.released.HasBeenNotified()) gated.released.Notify();
    pass.join();
    if (del.joinable()) del.join();
  });
  gated.held.WaitForNotification();  // the pass is writing the placed document
  del = std::thread([&] {
    answer = controller_->Delete("qwen3-32b");
    deleted.Notify();
  });
  // Time for the delete to reach the store first, as it did before.
  deleted.WaitForNotificationWithTimeout(absl::Milliseconds(300));
  gated.released.Notify();
  std::move(join).Invoke();
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_TRUE(answer->status().deleted());
  // What a controller started now would load: deleted, with the attempt
  // the node was sent (so that it stops it).
  auto stored = deploy_store_->ListDeployments();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_TRUE((*stored)[0].status().deleted()) << "the pass's placed version landed after the delete";
  EXPECT_EQ((*stored)[0].status().attempts_size(), 1);
  controller_->ReconcileOnceForTest();
  EXPECT_TRUE(a.AwaitInstances(0)) << "node-a still runs the deleted deployment";
}

// The other way round: the delete is in its write when a node that fits
// connects. The pass that places the deployment finds it marked when it
// comes to write, and leaves it: the node is never sent an instance of a
// deployment being deleted (it used to be sent one, then told to stop).
TEST_F(DeployControllerTest, ADeploymentBeingDeletedIsNotPlacedMeanwhile) {
  LockedSession a;
  GatedDeploymentStore gated(deploy_store_.get());
  MakeController(&gated, absl::Milliseconds(20));
  controller_->Start();
  ASSERT_TRUE(controller_->Deploy(Spec(), false).ok());  // no node yet: pending
  absl::Notification answered;
  gated.HoldNextDelete("qwen3-32b");
  controller_->DeleteAsync("qwen3-32b", [&](absl::StatusOr<dcufleet::v1::Deployment> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    answered.Notify();
  });
  gated.held.WaitForNotification();  // the writer is in the delete's transaction
  // Whatever fails below, the writer is let go and the threads stopped
  // before `a` goes.
  auto release = absl::MakeCleanup([&] {
    if (!gated.released.HasBeenNotified()) gated.released.Notify();
    controller_->Stop();
  });
  ASSERT_TRUE(fleet_->OnHello(MakeHello("node-a", "gfx928", 8, 64 * kGiB, 63 * kGiB), &a).ok());
  // Ten passes' time to place it (they did, before).
  absl::SleepFor(absl::Milliseconds(200));
  gated.released.Notify();
  answered.WaitForNotification();
  // Forgotten once a pass finds nothing running.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (controller_->Get("qwen3-32b").ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  controller_->Stop();
  EXPECT_FALSE(controller_->Get("qwen3-32b").ok()) << "the deleted deployment was never forgotten";
  EXPECT_EQ(a.most_instances(), 0) << "node-a was sent an instance of a deployment being deleted";
  auto stored = deploy_store_->ListDeployments();
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());
}

}  // namespace
}  // namespace dcu::controller
