// ReconnectRounds (issue 21): the order in which an agent dials a list of
// controllers and how long it sleeps between rounds, driven with the
// outcomes the three-controller set-up gives (a dead leader, standbys that
// name it, a new leader), so the numbers bench/ha/churn.sh measured come
// from rules a test pins: one doubling per round, not per address; a poll
// while a takeover is under way; a standby's leader dialled at once.
#include "agent/link/reconnect_rounds.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

const absl::Duration kInitial = absl::Milliseconds(200);
const absl::Duration kMax = absl::Seconds(30);

ReconnectRounds Rounds(std::vector<std::string> addresses) {
  return ReconnectRounds(std::move(addresses), kInitial, kMax, [] { return 1.0; });
}

TEST(ReconnectRoundsTest, AllDownDoublesOncePerRoundNotPerAddress) {
  ReconnectRounds r = Rounds({"a:7070", "b:7070", "c:7070"});
  absl::Duration expected = kInitial;
  for (int round = 0; round < 4; ++round) {
    auto s1 = r.Failed("");
    EXPECT_EQ(s1.next, 1u);
    EXPECT_EQ(s1.sleep, absl::ZeroDuration()) << "round " << round;
    EXPECT_TRUE(s1.fresh_channel);
    auto s2 = r.Failed("");
    EXPECT_EQ(s2.next, 2u);
    EXPECT_EQ(s2.sleep, absl::ZeroDuration());
    auto s3 = r.Failed("");
    EXPECT_EQ(s3.next, 0u);
    EXPECT_EQ(s3.sleep, expected) << "round " << round;
    expected *= 2;
  }
  EXPECT_EQ(r.backoff(), kInitial * 16);
  // Capped.
  for (int i = 0; i < 30; ++i) r.Failed("");
  EXPECT_EQ(r.backoff(), kMax);
  r.Connected();
  EXPECT_EQ(r.backoff(), kInitial);
}

// The leader (a) was SIGKILLed; b and c are standbys whose lease view still
// names a. The round is a, b (names a, which did not answer: no redirect),
// c (the same): a 1 s poll, not a back-off, and no doubling, however long
// the takeover takes.
TEST(ReconnectRoundsTest, StandbysNamingADeadLeaderMakeTheRoundAPoll) {
  ReconnectRounds r = Rounds({"a:7070", "b:7070", "c:7070"});
  for (int round = 0; round < 5; ++round) {
    auto sa = r.Failed("");  // a: nothing answers
    EXPECT_EQ(sa.next, 1u);
    auto sb = r.Failed("a:7070");
    EXPECT_FALSE(sb.redirected) << "a did not answer in this round";
    EXPECT_TRUE(sb.takeover_under_way);
    EXPECT_FALSE(sb.fresh_channel) << "b answered";
    EXPECT_EQ(sb.next, 2u);
    auto sc = r.Failed("a:7070");
    EXPECT_EQ(sc.next, 0u);
    EXPECT_EQ(sc.sleep, ReconnectRounds::kTakeoverPoll) << "round " << round;
  }
  EXPECT_EQ(r.backoff(), kInitial);
}

// Once c leads, b names it: the agent dials c at once, within the round.
TEST(ReconnectRoundsTest, AStandbyNamingALiveLeaderIsFollowedAtOnce) {
  ReconnectRounds r = Rounds({"a:7070", "b:7070", "c:7070"});
  r.Failed("");  // a dead
  auto sb = r.Failed("c:7070");
  EXPECT_TRUE(sb.redirected);
  EXPECT_EQ(sb.next, 2u);
  EXPECT_EQ(sb.sleep, absl::ZeroDuration());
  EXPECT_EQ(r.current(), 2u);
  r.Connected();
  EXPECT_EQ(r.backoff(), kInitial);
}

TEST(ReconnectRoundsTest, ALeaderOutsideTheListIsAddedAndDialled) {
  ReconnectRounds r = Rounds({"a:7070"});
  auto s = r.Failed("d:7070");
  EXPECT_TRUE(s.redirected);
  ASSERT_EQ(r.addresses().size(), 2u);
  EXPECT_EQ(r.addresses()[1], "d:7070");
  EXPECT_EQ(s.next, 1u);
}

// Two standbys each naming the other (a stale view on both): the redirects
// of a round are bounded, and the round ends in a poll.
TEST(ReconnectRoundsTest, StandbysNamingEachOtherCannotLoop) {
  ReconnectRounds r = Rounds({"a:7070", "b:7070"});
  int dials = 0;
  ReconnectRounds::Step s;
  do {
    ASSERT_LT(++dials, 20) << "no sleep after " << dials << " dials";
    s = r.Failed(r.current() == 0 ? "b:7070" : "a:7070");
  } while (s.sleep == absl::ZeroDuration());
  EXPECT_EQ(s.sleep, ReconnectRounds::kTakeoverPoll);
  EXPECT_LE(dials, 6);
}

TEST(ReconnectRoundsTest, AStreamThatEndsMovesOnWithoutMarkingTheAddressDead) {
  ReconnectRounds r = Rounds({"a:7070"});
  r.Connected();
  auto s = r.Ended();
  EXPECT_EQ(s.next, 0u);
  EXPECT_FALSE(s.fresh_channel);
  EXPECT_EQ(s.sleep, kInitial) << "a controller that drops every stream is not dialled in a tight loop";
  EXPECT_EQ(r.Ended().sleep, kInitial * 2);
}

TEST(ReconnectRoundsTest, JitterScalesTheSleepWithinHalfToWhole) {
  ReconnectRounds r({"a:7070"}, kInitial, kMax, [] { return 0.1; });  // clamped to 0.5
  EXPECT_EQ(r.Failed("").sleep, kInitial / 2);
}

}  // namespace
}  // namespace dcu::agent
