// common/file_lock.h: the one exclusive lock file (an agent's state
// directory, a model transfer). flock(2) locks belong to the open file
// description, so a second TryAcquire in this process conflicts exactly as a
// second process would; the child-process case is the agent's own test
// (FleetLinkTest.ASecondAgentOnOneStateDirectoryIsRefusedNamingTheFirst).
#include "common/file_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"

namespace dcu::common {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ExclusiveFileLockTest, ASecondHolderIsRefusedNamingTheFirstUntilItLetsGo) {
  testing::TempDir dir;
  const std::string path = dir.Join("agent.lock");
  auto first = ExclusiveFileLock::TryAcquire(path);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*first)->DescribeHolder("dcu-agent pid 42, node 'n1'").ok());

  auto second = ExclusiveFileLock::TryAcquire(path);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(second.status().message(), HasSubstr("'" + path + "' is locked by another process"));
  EXPECT_THAT(second.status().message(), HasSubstr("(dcu-agent pid 42, node 'n1')"));

  first->reset();
  auto third = ExclusiveFileLock::TryAcquire(path);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST(ExclusiveFileLockTest, ALockLeftByAKilledProcessIsFree) {
  testing::TempDir dir;
  const std::string path = dir.Join("agent.lock");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto held = ExclusiveFileLock::TryAcquire(path);
    if (!held.ok()) _exit(3);
    if (!(*held)->DescribeHolder("child").ok()) _exit(4);
    pause();  // until SIGKILL
    _exit(0);
  }
  // The child holds it once its line is written.
  bool held = false;
  for (int i = 0; i < 500 && !held; ++i) {
    std::ifstream in(path);
    std::string line;
    held = std::getline(in, line) && line == "child";
    if (!held) usleep(10000);
  }
  ASSERT_TRUE(held);
  EXPECT_EQ(ExclusiveFileLock::TryAcquire(path).status().code(), absl::StatusCode::kAborted);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  // The file is still there, with the dead holder's line: the kernel's lock,
  // not the file, decides.
  auto after = ExclusiveFileLock::TryAcquire(path);
  EXPECT_TRUE(after.ok()) << after.status();
}

TEST(ExclusiveFileLockTest, AHolderLineIsPrintableAndOneLine) {
  testing::TempDir dir;
  const std::string path = dir.Join("x.lock");
  auto first = ExclusiveFileLock::TryAcquire(path);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->DescribeHolder(std::string("pid 1\x1b[31m red\nsecond line")).ok());
  auto second = ExclusiveFileLock::TryAcquire(path);
  EXPECT_THAT(second.status().message(), HasSubstr("(pid 1?[31m red)"));
  EXPECT_THAT(second.status().message(), Not(HasSubstr("second line")));
}

TEST(ExclusiveFileLockTest, AnUnopenablePathIsUnavailableNamingIt) {
  testing::TempDir dir;
  const std::string path = dir.Join("no/such/dir/agent.lock");
  auto lock = ExclusiveFileLock::TryAcquire(path);
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(lock.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace dcu::common
