// When an agent inside a Slurm job drains and leaves (issue 20,
// agent/drain/job_drain.h).
#include "agent/drain/job_drain.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using ::testing::HasSubstr;
using Verdict = JobDrain::Verdict;

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

dcufleet::v1::NodeAllocation Job(absl::Duration limit) {
  dcufleet::v1::NodeAllocation a;
  a.set_scheduler("slurm");
  a.set_job_id("12");
  if (limit > absl::ZeroDuration()) a.set_end_time_ms(absl::ToUnixMillis(kStart + limit));
  return a;
}

JobDrainOptions Options(absl::Duration before, absl::Duration margin = absl::Seconds(30),
                        absl::Duration grace = absl::ZeroDuration()) {
  JobDrainOptions o;
  o.drain_before = before;
  o.stop_margin = margin;
  o.term_grace = grace;
  return o;
}

TEST(JobDrainTest, DrainsBeforeTheTimeLimitAndLeavesOnceNothingRuns) {
  JobDrain d(Job(absl::Hours(2)), Options(absl::Minutes(10)), kStart);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(109), false, false), Verdict::kServe);
  EXPECT_FALSE(d.drain().has_value());
  EXPECT_EQ(d.Check(kStart + absl::Minutes(110), false, false), Verdict::kDrain);
  ASSERT_TRUE(d.drain().has_value());
  EXPECT_THAT(d.drain()->reason(), HasSubstr("slurm job '12' ends at "));
  EXPECT_THAT(d.drain()->reason(), HasSubstr("(time limit)"));
  EXPECT_EQ(d.drain()->deadline_ms(),
            absl::ToUnixMillis(kStart + absl::Hours(2) - absl::Seconds(30)));
  EXPECT_EQ(d.drain()->since_ms(), absl::ToUnixMillis(kStart + absl::Minutes(110)));
  // Still serving what has not moved.
  EXPECT_EQ(d.Check(kStart + absl::Minutes(112), false, false), Verdict::kDrain);
  // Its replicas moved: it leaves.
  EXPECT_EQ(d.Check(kStart + absl::Minutes(113), false, true), Verdict::kLeave);
  EXPECT_THAT(d.leave_reason(), HasSubstr("drained"));
  // And stays left.
  EXPECT_EQ(d.Check(kStart + absl::Minutes(114), false, false), Verdict::kLeave);
}

TEST(JobDrainTest, LeavesAtTheDeadlineWhateverStillRuns) {
  JobDrain d(Job(absl::Hours(1)), Options(absl::Minutes(10), absl::Minutes(1)), kStart);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(50), false, false), Verdict::kDrain);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(58) + absl::Seconds(59), false, false), Verdict::kDrain);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(59), false, false), Verdict::kLeave);
  EXPECT_THAT(d.leave_reason(), HasSubstr("drain deadline reached"));
}

TEST(JobDrainTest, AShortJobServesItsFirstHalfInsteadOfDrainingFromTheStart) {
  // drain_before 10 min, but the job has 6: it drains at 3.
  JobDrain d(Job(absl::Minutes(6)), Options(absl::Minutes(10)), kStart);
  EXPECT_EQ(d.Check(kStart, false, true), Verdict::kServe);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(2) + absl::Seconds(59), false, false), Verdict::kServe);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(3), false, false), Verdict::kDrain);
}

TEST(JobDrainTest, SigtermLeavesAtOnceWithoutGrace) {
  JobDrain d(Job(absl::Hours(1)), Options(absl::Minutes(10)), kStart);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(5), true, false), Verdict::kLeave);
  EXPECT_THAT(d.leave_reason(), HasSubstr("slurm job '12' was told to end (SIGTERM)"));
}

TEST(JobDrainTest, SigtermWithGraceDrainsUntilTheGraceEnds) {
  JobDrain d(Job(absl::Hours(1)), Options(absl::Minutes(10), absl::Seconds(30), absl::Minutes(2)),
             kStart);
  const absl::Time t = kStart + absl::Minutes(5);
  EXPECT_EQ(d.Check(t, true, false), Verdict::kDrain);
  EXPECT_EQ(d.drain()->deadline_ms(), absl::ToUnixMillis(t + absl::Minutes(2)));
  EXPECT_EQ(d.Check(t + absl::Minutes(1), true, false), Verdict::kDrain);
  EXPECT_EQ(d.Check(t + absl::Minutes(2), true, false), Verdict::kLeave);
}

TEST(JobDrainTest, SigtermDuringATimeLimitDrainOnlyBringsTheDeadlineForward) {
  JobDrain d(Job(absl::Hours(1)), Options(absl::Minutes(10), absl::Seconds(30), absl::Minutes(1)),
             kStart);
  EXPECT_EQ(d.Check(kStart + absl::Minutes(50), false, false), Verdict::kDrain);
  const int64_t since = d.drain()->since_ms();
  EXPECT_EQ(d.Check(kStart + absl::Minutes(52), true, false), Verdict::kDrain);
  EXPECT_EQ(d.drain()->deadline_ms(), absl::ToUnixMillis(kStart + absl::Minutes(53)));
  EXPECT_EQ(d.drain()->since_ms(), since);
  EXPECT_THAT(d.drain()->reason(), HasSubstr("then told to end (SIGTERM)"));
}

TEST(JobDrainTest, AJobWithoutAnEndTimeDrainsOnlyOnSigterm) {
  JobDrain d(Job(absl::ZeroDuration()), Options(absl::Minutes(10)), kStart);
  EXPECT_EQ(d.Check(kStart + absl::Hours(1000), false, false), Verdict::kServe);
  EXPECT_EQ(d.Check(kStart + absl::Hours(1001), true, true), Verdict::kLeave);
}

}  // namespace
}  // namespace dcu::agent
