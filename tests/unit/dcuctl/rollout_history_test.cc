// dcuctl rollout history: revisions as the controller keeps them on a
// deployment (current_revision, revision_history).
#include "dcuctl/scale_commands.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::dcuctl {
namespace {

dcufleet::v1::SpecRevision Revision(int number, int64_t since_ms, const std::string& change,
                                    int max_model_len) {
  dcufleet::v1::SpecRevision r;
  r.set_number(number);
  r.set_since_ms(since_ms);
  r.set_change(change);
  r.mutable_spec()->set_max_model_len(max_model_len);
  return r;
}

TEST(RolloutHistoryTest, TheKeptRevisionsThenTheCurrentOneWithTheDeploymentsSpec) {
  dcufleet::v1::Deployment d;
  d.mutable_spec()->set_name("chat");
  d.mutable_spec()->set_max_model_len(4096);
  // Revision 1 was rolled back to (it is 3 now); 2 and 4 are kept.
  *d.add_revision_history() = Revision(2, 2000, "max_model_len 8192 -> 2048", 2048);
  *d.add_revision_history() = Revision(3, 3000, "max_model_len 2048 -> 8192", 8192);
  *d.mutable_current_revision() = Revision(4, 4000, "max_model_len 8192 -> 4096", 0);
  d.mutable_current_revision()->clear_spec();
  std::vector<RolloutRevision> r = RevisionsOf(d);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].revision, 2);
  EXPECT_EQ(r[0].spec.max_model_len(), 2048);
  EXPECT_FALSE(r[0].current);
  EXPECT_EQ(r[1].revision, 3);
  EXPECT_EQ(r[1].change, "max_model_len 2048 -> 8192");
  EXPECT_EQ(r[2].revision, 4);
  EXPECT_EQ(r[2].at_ms, 4000);
  EXPECT_TRUE(r[2].current);
  EXPECT_EQ(r[2].spec.max_model_len(), 4096) << "the current one's spec is the deployment's";
}

TEST(RolloutHistoryTest, AControllerThatKeepsNoRevisionsGivesNone) {
  dcufleet::v1::Deployment d;
  d.mutable_spec()->set_name("chat");
  d.mutable_previous_spec()->set_max_model_len(8192);
  EXPECT_TRUE(RevisionsOf(d).empty());
}

}  // namespace
}  // namespace dcu::dcuctl
