// dcuctl rollout history: revisions read from a deployment's events.
#include "dcuctl/scale_commands.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

void Add(dcufleet::v1::ListEventsResponse* r, int64_t at_ms, const std::string& reason,
         const std::string& message) {
  auto* e = r->add_events();
  e->set_id(r->events_size());
  e->set_at_ms(at_ms);
  e->set_kind("deployment");
  e->set_name("chat");
  e->set_reason(reason);
  e->set_message(message);
}

TEST(RolloutHistoryTest, CreationAndEachRolloutOfThisIncarnationOnly) {
  dcufleet::v1::ListEventsResponse events;
  // A deleted deployment of the same name, before this one was born.
  Add(&events, 100, "Created", "model old");
  Add(&events, 150, "RolloutStarted", "tp 2 -> 4; replicas are replaced one at a time");
  Add(&events, 1000, "Created", "model qwen3-32b TP=4 max_model_len=8192");
  Add(&events, 1100, "Scheduled", "attempt 1: node 'a'");
  Add(&events, 2000, "RolloutStarted",
      "max_num_seqs 16 -> 32; replicas are replaced one at a time (a new one first while devices allow)");
  Add(&events, 2500, "Scaled", "replicas 1 -> 2; adding replica 1");  // not a revision
  Add(&events, 3000, "RolloutStarted", "restart requested; replicas are replaced one at a time");
  bool complete = false;
  std::vector<RolloutRevision> r = RevisionsFromEvents(events, /*born_ms=*/1000, &complete);
  EXPECT_TRUE(complete);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].revision, 1);
  EXPECT_EQ(r[0].change, "created: model qwen3-32b TP=4 max_model_len=8192");
  EXPECT_EQ(r[1].revision, 2);
  EXPECT_EQ(r[1].at_ms, 2000);
  EXPECT_EQ(r[1].change, "max_num_seqs 16 -> 32");
  EXPECT_EQ(r[2].change, "restart requested");
}

TEST(RolloutHistoryTest, WithoutItsCreationInViewItSaysSo) {
  dcufleet::v1::ListEventsResponse events;
  Add(&events, 5000, "RolloutStarted", "max_model_len 8192 -> 32768; replicas are replaced one at a time");
  bool complete = true;
  std::vector<RolloutRevision> r = RevisionsFromEvents(events, /*born_ms=*/1000, &complete);
  EXPECT_FALSE(complete);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].change, "max_model_len 8192 -> 32768");
  // Nothing at all: no revisions, and not complete.
  r = RevisionsFromEvents(dcufleet::v1::ListEventsResponse(), 1000, &complete);
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(complete);
}

}  // namespace
}  // namespace dcu::dcuctl
