// common/proc_stat: the one /proc/PID/stat parser (runtimes, holder scan,
// reaper, test helpers, loadgen).
#include "common/proc_stat.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dcu::common {
namespace {

TEST(ParseProcStatTest, CommWithSpacesAndParens) {
  auto st = ParseProcStat("77 (a) b (c) Z 12 77 78 0 -1 0 0 0 0 0 31 9 0 0 20 0 1 0 4242 0 0");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->pid, 77);
  EXPECT_EQ(st->comm, "a) b (c");
  EXPECT_EQ(st->state, 'Z');
  EXPECT_EQ(st->ppid, 12);
  EXPECT_EQ(st->pgid, 77);
  EXPECT_EQ(st->sid, 78);
  EXPECT_EQ(st->utime_ticks, 31u);
  EXPECT_EQ(st->stime_ticks, 9u);
  EXPECT_EQ(st->start_ticks, 4242u);
}

TEST(ParseProcStatTest, TrailingNewlineAfterStartTime) {
  // A line that ends right after field 22 (fixtures do): the newline is not
  // part of the number.
  auto st = ParseProcStat("5 (sh) S 1 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99\n");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->start_ticks, 99u);
}

TEST(ParseProcStatTest, RefusesMalformed) {
  EXPECT_EQ(ParseProcStat("garbage").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseProcStat("").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseProcStat("1 (x) S").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseProcStat("1 )x( S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseProcStat("x (y) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseProcStat("1 (y) S one 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(ReadProcStatTest, ThisProcessAndAMissingOne) {
  auto self = ReadProcStat("/proc", getpid());
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_EQ(self->pid, getpid());
  EXPECT_EQ(self->ppid, getppid());
  EXPECT_EQ(self->state, 'R');
  EXPECT_GT(self->start_ticks, 0u);

  std::string root = ::testing::TempDir() + "/dcu-proc-stat";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/42");
  EXPECT_EQ(ReadProcStat(root, 41).status().code(), absl::StatusCode::kNotFound);
  std::ofstream(root + "/42/stat") << "42 (broken";
  auto broken = ReadProcStat(root, 42);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(broken.status().message().find(root + "/42/stat"), absl::string_view::npos);
}

}  // namespace
}  // namespace dcu::common
