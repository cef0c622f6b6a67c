// The picker without sockets: replicas as data, requests as Pick/Finish.
#include "gateway/replica_picker.h"

#include <map>

#include "gtest/gtest.h"

namespace dcu::gateway {
namespace {

Replica Ready(int port) {
  Replica r;
  r.host = "127.0.0.1";
  r.port = port;
  r.ready = true;
  return r;
}

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(ReplicaPickerTest, NoReadyReplicaIsNoPick) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2)};
  replicas[0].ready = false;
  replicas[1].ready = false;
  EXPECT_FALSE(picker.Pick(replicas, {}, kNow).has_value());
  EXPECT_FALSE(picker.Pick({}, {}, kNow).has_value());
}

TEST(ReplicaPickerTest, ExcludedAndNotReadyReplicasAreNeverPicked) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2), Ready(3)};
  replicas[1].ready = false;
  for (int i = 0; i < 10; ++i) {
    auto pick = picker.Pick(replicas, {replicas[0].Key()}, kNow);
    ASSERT_TRUE(pick.has_value());
    EXPECT_EQ(*pick, 2u);
  }
}

TEST(ReplicaPickerTest, InFlightRequestsSpreadEvenlyWhenNothingIsKnown) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2), Ready(3)};
  std::map<size_t, int> count;
  for (int i = 0; i < 9; ++i) ++count[*picker.Pick(replicas, {}, kNow)];
  EXPECT_EQ(count[0], 3);
  EXPECT_EQ(count[1], 3);
  EXPECT_EQ(count[2], 3);
  EXPECT_EQ(picker.InFlight(replicas[0].Key()), 3);
}

TEST(ReplicaPickerTest, SlowerReplicaGetsFewerOfTheOpenRequests) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2)};
  // One finished request each: replica 2 took four times as long.
  ASSERT_EQ(*picker.Pick(replicas, {}, kNow), 0u);
  ASSERT_EQ(*picker.Pick(replicas, {}, kNow), 1u);
  picker.Finish(replicas[0].Key(), absl::Milliseconds(100), /*completed=*/true);
  picker.Finish(replicas[1].Key(), absl::Milliseconds(400), /*completed=*/true);
  std::map<size_t, int> count;
  for (int i = 0; i < 10; ++i) ++count[*picker.Pick(replicas, {}, kNow)];
  // Equal expected wait: (n0 + 1) * 100 == (n1 + 1) * 400 -> 8 and 2.
  EXPECT_EQ(count[0], 8);
  EXPECT_EQ(count[1], 2);
}

TEST(ReplicaPickerTest, RoundRobinIgnoresLoad) {
  ReplicaPicker picker(PickerOptions{.policy = PickPolicy::kRoundRobin});
  std::vector<Replica> replicas = {Ready(1), Ready(2)};
  picker.Pick(replicas, {}, kNow);
  picker.Pick(replicas, {}, kNow);
  picker.Finish(replicas[0].Key(), absl::Milliseconds(100), true);
  picker.Finish(replicas[1].Key(), absl::Milliseconds(400), true);
  std::map<size_t, int> count;
  for (int i = 0; i < 10; ++i) ++count[*picker.Pick(replicas, {}, kNow)];
  EXPECT_EQ(count[0], 5);
  EXPECT_EQ(count[1], 5);
}

TEST(ReplicaPickerTest, FreshEngineQueueSteersAwayStaleOneIsIgnored) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2)};
  replicas[0].load.waiting = 7;  // other clients' queue on replica 1
  replicas[0].load.running = 4;
  replicas[0].load.scraped_at_ms = absl::ToUnixMillis(kNow - absl::Seconds(1));
  EXPECT_GT(picker.Score(replicas[0], replicas, kNow), picker.Score(replicas[1], replicas, kNow));
  EXPECT_EQ(*picker.Pick(replicas, {}, kNow), 1u);

  ReplicaPicker later;
  replicas[0].load.scraped_at_ms = absl::ToUnixMillis(kNow - absl::Seconds(30));
  EXPECT_EQ(later.Score(replicas[0], replicas, kNow), later.Score(replicas[1], replicas, kNow));
}

TEST(ReplicaPickerTest, NearlyFullKvCacheCounts) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2)};
  for (auto& r : replicas) r.load.scraped_at_ms = absl::ToUnixMillis(kNow);
  replicas[0].load.kv_cache_usage = 0.99;
  replicas[1].load.kv_cache_usage = 0.5;
  EXPECT_GT(picker.Score(replicas[0], replicas, kNow), picker.Score(replicas[1], replicas, kNow));
}

TEST(ReplicaPickerTest, EjectedReplicaIsPassedOverUntilItsTime) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2)};
  picker.Eject(replicas[0].Key(), kNow + absl::Seconds(2));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(*picker.Pick(replicas, {}, kNow), 1u);
  // Back after the ejection, and it is the least loaded.
  EXPECT_EQ(*picker.Pick(replicas, {}, kNow + absl::Seconds(3)), 0u);
}

TEST(ReplicaPickerTest, FinishWithoutCompletionFreesTheSlotButTeachesNoLatency) {
  ReplicaPicker picker;
  std::vector<Replica> replicas = {Ready(1), Ready(2)};
  picker.Pick(replicas, {}, kNow);
  picker.Finish(replicas[0].Key(), absl::Milliseconds(5000), /*completed=*/false);
  EXPECT_EQ(picker.InFlight(replicas[0].Key()), 0);
  EXPECT_EQ(picker.Score(replicas[0], replicas, kNow), picker.Score(replicas[1], replicas, kNow));
}

}  // namespace
}  // namespace dcu::gateway
