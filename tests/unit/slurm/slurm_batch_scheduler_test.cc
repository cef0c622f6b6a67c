#include "controller/adapters/slurm_batch_scheduler.h"

#include <unistd.h>

#include <fstream>

#include "controller/adapters/pools_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Lines as squeue 22.05 prints them for --format=%i|%T|%r|%N|%e|%k under
// SLURM_TIME_FORMAT=%s (tests/integration/slurm/slurm_pool_test.cc runs
// the real one).
TEST(SlurmBatchSchedulerTest, ReadsSqueueLines) {
  auto jobs = SlurmBatchScheduler::ParseSqueue(
      "12|PENDING|Resources||N/A|qwen3-32b\n"
      "13|RUNNING|None|n1|1783003600|qwen3-32b#1\n"
      "14|CANCELLED|None|n2|1783000100|(null)\n\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].id, "12");
  EXPECT_EQ((*jobs)[0].state, BatchJobState::kPending);
  EXPECT_EQ((*jobs)[0].reason, "Resources");
  EXPECT_EQ((*jobs)[0].nodes, "");
  EXPECT_EQ((*jobs)[0].end_time, absl::InfinitePast());
  EXPECT_EQ((*jobs)[0].comment, "qwen3-32b");
  EXPECT_EQ((*jobs)[1].state, BatchJobState::kRunning);
  EXPECT_EQ((*jobs)[1].nodes, "n1");
  EXPECT_EQ((*jobs)[1].end_time, absl::FromUnixSeconds(1783003600));
  EXPECT_EQ((*jobs)[1].comment, "qwen3-32b#1");
  EXPECT_EQ((*jobs)[2].state, BatchJobState::kEnded);
  EXPECT_EQ((*jobs)[2].scheduler_state, "CANCELLED");
  EXPECT_EQ((*jobs)[2].comment, "");
}

TEST(SlurmBatchSchedulerTest, BadSqueueOutputIsAnErrorNamingTheLine) {
  auto r = SlurmBatchScheduler::ParseSqueue("12|PENDING|Resources||N/A|a\nJOBID STATE\n");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(r.status().message(), HasSubstr("squeue output line 2 'JOBID STATE': 1 fields, not 6"));
  r = SlurmBatchScheduler::ParseSqueue("x1|PENDING|Resources||N/A|a\n");
  EXPECT_THAT(r.status().message(), HasSubstr("the job id is not a number"));
  r = SlurmBatchScheduler::ParseSqueue("12|WAITING|Resources||N/A|a\n");
  EXPECT_THAT(r.status().message(), HasSubstr("unknown job state 'WAITING'"));
}

TEST(SlurmBatchSchedulerTest, ReadsSbatchParsable) {
  EXPECT_EQ(*SlurmBatchScheduler::ParseSbatch("42\n"), "42");
  EXPECT_EQ(*SlurmBatchScheduler::ParseSbatch("42;dcutest\n"), "42");
  EXPECT_THAT(SlurmBatchScheduler::ParseSbatch("sbatch: error: x\n").status().message(),
              HasSubstr("not a job id"));
}

TEST(SlurmBatchSchedulerTest, SbatchArgvCarriesThePoolsChoices) {
  BatchJobRequest r;
  r.name = "dcufleet-hpc";
  r.comment = "qwen#1";
  r.partition = "dcu";
  r.qos = "normal";
  r.gres = "dcu";
  r.gres_count = 4;
  r.time_limit = absl::Minutes(90);
  r.output = "/tmp/x-%j.log";
  EXPECT_THAT(SlurmBatchScheduler::SbatchArgv("/usr/bin/sbatch", r),
              ElementsAre("/usr/bin/sbatch", "--parsable", "--job-name=dcufleet-hpc", "--comment=qwen#1",
                          "--partition=dcu", "--qos=normal", "--gres=dcu:4", "--time=90",
                          "--output=/tmp/x-%j.log"));
}

TEST(PoolsConfigTest, ReadsAFileAndNamesWhereItIsWrong) {
  std::string path = ::testing::TempDir() + "/pools-" + std::to_string(getpid()) + ".txtpb";
  std::ofstream(path) << "slurm {\n  name: \"hpc\"\n  partition: \"dcu\"\n  max_jobs: 3\n}\n";
  auto c = LoadPoolsConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->slurm_size(), 1);
  EXPECT_EQ(c->slurm(0).max_jobs(), 3);
  std::ofstream(path, std::ios::trunc) << "slurm {\n  name: \"hpc\"\n  partitions: \"dcu\"\n}\n";
  c = LoadPoolsConfigFile(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr(path + ":3:"));
  EXPECT_THAT(c.status().message(), HasSubstr("partitions"));
  EXPECT_EQ(LoadPoolsConfigFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dcu::controller
