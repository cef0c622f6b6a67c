// The rules of an agent's stream (controller/core/agent_stream.h) against a
// real FleetState on an in-memory SQLite store.
#include "controller/core/agent_stream.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "controller/store/sqlite_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;

class RecordingSession : public NodeSession {
 public:
  bool Send(dcufleet::v1::ControllerMessage m) override {
    sent.push_back(std::move(m));
    return true;
  }
  std::string Peer() const override { return "test"; }
  std::vector<dcufleet::v1::ControllerMessage> sent;
};

dcufleet::v1::AgentMessage HelloMessage(const std::string& name) {
  dcufleet::v1::AgentMessage m;
  dcufleet::v1::Hello* h = m.mutable_hello();
  h->set_node_name(name);
  h->set_agent_version("0.1.0");
  h->set_token("bootstrap-secret");
  for (int i = 0; i < 2; ++i) h->mutable_inventory()->add_devices()->set_index(i);
  return m;
}

dcufleet::v1::AgentMessage GoodbyeMessage() {
  dcufleet::v1::AgentMessage m;
  m.mutable_goodbye()->set_reason("job ended");
  return m;
}

class AgentStreamRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*SqliteStore::Open(":memory:"));
    fleet_ = std::make_unique<FleetState>(store_.get(), store_.get(), &clock_, FleetState::Options());
  }
  // A stream whose caller may speak only for `allowed` (as a node's
  // certificate may), recording each name it was asked about.
  std::unique_ptr<AgentStreamRules> Open(RecordingSession* session, std::string allowed) {
    return std::make_unique<AgentStreamRules>(
        fleet_.get(), session,
        [this, allowed](absl::string_view field, absl::string_view name) {
          asked_.push_back(absl::StrCat(field, "=", name));
          if (name == allowed) return absl::OkStatus();
          return absl::PermissionDeniedError(absl::StrCat("may not speak for '", name, "'"));
        });
  }
  // Registers `name` on a new stream, as node_service.cc does.
  std::unique_ptr<AgentStreamRules> Registered(RecordingSession* session, const std::string& name) {
    auto rules = Open(session, name);
    dcufleet::v1::AgentMessage hello = HelloMessage(name);
    absl::StatusOr<dcufleet::v1::Hello> taken = rules->TakeHello(hello);
    EXPECT_TRUE(taken.ok()) << taken.status();
    EXPECT_TRUE(rules->Register(*std::move(taken)).ok());
    return rules;
  }
  int64_t RefusedOf(const std::string& node) {
    return fleet_->GetNode(node)->drops().messages_refused();
  }

  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<FleetState> fleet_;
  std::vector<std::string> asked_;
};

TEST_F(AgentStreamRulesTest, AHelloRegistersTheNodeWithoutItsToken) {
  RecordingSession session;
  auto rules = Open(&session, "node-a");
  dcufleet::v1::AgentMessage first = HelloMessage("node-a");
  absl::StatusOr<dcufleet::v1::Hello> hello = rules->TakeHello(first);
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->token(), "") << "a token in a Hello is never kept";
  EXPECT_THAT(asked_, ::testing::ElementsAre("hello.node_name=node-a"));
  EXPECT_FALSE(rules->registered()) << "not before the Hello is committed";
  ASSERT_TRUE(rules->Register(*std::move(hello)).ok());
  EXPECT_TRUE(rules->registered());
  EXPECT_EQ(rules->node(), "node-a");
  ASSERT_EQ(session.sent.size(), 1u);
  EXPECT_TRUE(session.sent[0].has_welcome());
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_READY);
}

TEST_F(AgentStreamRulesTest, ARegistrationAnsweredAsyncTakesTheNodeToo) {
  RecordingSession session;
  auto rules = Open(&session, "node-a");
  dcufleet::v1::AgentMessage first = HelloMessage("node-a");
  absl::StatusOr<dcufleet::v1::Hello> hello = rules->TakeHello(first);
  ASSERT_TRUE(hello.ok());
  absl::Notification answered;
  absl::Status answer = absl::UnknownError("not answered");
  rules->RegisterAsync(*std::move(hello), [&](absl::Status s) {
    answer = s;
    answered.Notify();
  });
  answered.WaitForNotification();
  EXPECT_TRUE(answer.ok()) << answer;
  EXPECT_EQ(rules->node(), "node-a");
}

TEST_F(AgentStreamRulesTest, AStreamMustOpenWithAHello) {
  RecordingSession session;
  auto rules = Open(&session, "node-a");
  dcufleet::v1::AgentMessage first = GoodbyeMessage();
  absl::StatusOr<dcufleet::v1::Hello> hello = rules->TakeHello(first);
  ASSERT_FALSE(hello.ok());
  EXPECT_EQ(hello.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(hello.status().message(), HasSubstr("must be Hello"));
  rules->Refused(hello.status());
  rules->Disconnected();
  EXPECT_TRUE(fleet_->ListNodes().empty());
  EXPECT_TRUE(session.sent.empty());
}

TEST_F(AgentStreamRulesTest, AHelloForANameTheCallerMayNotUseChangesNothing) {
  // node-a is registered; a caller whose certificate is node-b's claims it.
  RecordingSession a_session, b_session;
  auto a = Registered(&a_session, "node-a");
  auto b = Open(&b_session, "node-b");
  dcufleet::v1::AgentMessage first = HelloMessage("node-a");
  absl::StatusOr<dcufleet::v1::Hello> hello = b->TakeHello(first);
  ASSERT_FALSE(hello.ok());
  EXPECT_EQ(hello.status().code(), absl::StatusCode::kPermissionDenied);
  b->Refused(hello.status());
  b->Disconnected();
  // Its refusal is not counted against node-a (it never got to claim the
  // name), and node-a's stream is untouched.
  EXPECT_EQ(RefusedOf("node-a"), 0);
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_READY);
  EXPECT_TRUE(b_session.sent.empty());
}

TEST_F(AgentStreamRulesTest, AnInvalidHelloIsRefusedBeforeItsNameIsAsked) {
  RecordingSession session;
  auto rules = Open(&session, "node-a");
  dcufleet::v1::AgentMessage first = HelloMessage("node-a");
  first.mutable_hello()->set_advertise_address("$(reboot)");
  absl::StatusOr<dcufleet::v1::Hello> hello = rules->TakeHello(first);
  ASSERT_FALSE(hello.ok());
  EXPECT_THAT(hello.status().message(), HasSubstr("hello.advertise_address"));
  EXPECT_TRUE(asked_.empty());
}

TEST_F(AgentStreamRulesTest, ASecondHelloIsRefusedAndCountedOnTheNode) {
  RecordingSession session;
  auto rules = Registered(&session, "node-a");
  dcufleet::v1::AgentMessage again = HelloMessage("node-a");
  absl::Status s = rules->Handle(again);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("second Hello"));
  rules->Refused(s);
  EXPECT_EQ(RefusedOf("node-a"), 1);
  EXPECT_THAT(fleet_->GetNode("node-a")->drops().last_reason(), HasSubstr("second Hello"));
}

TEST_F(AgentStreamRulesTest, AnEmptyOrInvalidMessageIsRefusedAndCounted) {
  RecordingSession session;
  auto rules = Registered(&session, "node-a");
  dcufleet::v1::AgentMessage empty;
  absl::Status s = rules->Handle(empty);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  rules->Refused(s);
  dcufleet::v1::AgentMessage bad = GoodbyeMessage();
  bad.mutable_goodbye()->set_reason(std::string(1 << 20, 'x'));
  s = rules->Handle(bad);
  EXPECT_FALSE(s.ok());
  rules->Refused(s);
  EXPECT_EQ(RefusedOf("node-a"), 2);
  EXPECT_NE(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_LOST)
      << "a refused Goodbye is not taken";
}

TEST_F(AgentStreamRulesTest, MessagesGoToTheRegisteredNode) {
  RecordingSession session;
  auto rules = Registered(&session, "node-a");
  dcufleet::v1::AgentMessage bye = GoodbyeMessage();
  ASSERT_TRUE(rules->Handle(bye).ok());
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_LOST);
}

TEST_F(AgentStreamRulesTest, AnEndedStreamLeavesTheNodeNotReadyAndAStaleOneCannotSpeak) {
  RecordingSession first_session, second_session;
  auto first = Registered(&first_session, "node-a");
  first->Disconnected();
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_NOT_READY);
  // The agent dials again; the old stream's rules still name node-a, but
  // its session is no longer the node's.
  auto second = Registered(&second_session, "node-a");
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_READY);
  dcufleet::v1::AgentMessage bye = GoodbyeMessage();
  ASSERT_TRUE(first->Handle(bye).ok()) << "a Goodbye from a stale stream is ignored, not refused";
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_READY);
  first->Disconnected();
  EXPECT_EQ(fleet_->GetNode("node-a")->state(), dcufleet::v1::NODE_READY)
      << "the stale stream's end does not take the live one down";
}

}  // namespace
}  // namespace dcu::controller
