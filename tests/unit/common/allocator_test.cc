// The allocator's free pages handed back to the kernel (common/allocator.h).
// Built twice: linked with tcmalloc (allocator_tcmalloc_test, as
// dcu-controller is) and with glibc malloc (allocator_test, as every other
// binary is), where the calls must say "unknown" and do nothing.
#include "common/allocator.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"

namespace dcu::common {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// 96 MiB in 1-MiB blocks, each page written (so the RSS holds it), then
// freed: tcmalloc keeps such blocks' pages in its page heap.
void TouchAndFree96MiB() {
  std::vector<char*> blocks;
  for (int i = 0; i < 96; ++i) {
    char* p = static_cast<char*>(std::malloc(kMiB));
    ASSERT_NE(p, nullptr);
    std::memset(p, i + 1, kMiB);
    blocks.push_back(p);
  }
  for (char* p : blocks) std::free(p);
}

#ifdef DCU_TEST_TCMALLOC

int64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      int64_t kib = 0;
      status >> kib;
      return kib << 10;
    }
    status.ignore(1 << 20, '\n');
  }
  ADD_FAILURE() << "no VmRSS in /proc/self/status";
  return 0;
}


TEST(AllocatorTcmalloc, NamesTcmalloc) { EXPECT_TRUE(absl::StartsWith(MallocName(), "tcmalloc 2.")); }

TEST(AllocatorTcmalloc, FreedPagesStayInTheRssUntilReleased) {
  ReleaseFreeMallocMemory(MallocFreePageBytes());  // what earlier tests left
  const int64_t rss_before = RssBytes();
  TouchAndFree96MiB();
  const int64_t free_bytes = MallocFreePageBytes();
  const int64_t rss_freed = RssBytes();
  // Freed, yet still resident: what the controller showed after a wave.
  EXPECT_GE(free_bytes, 80 * kMiB);
  EXPECT_GE(rss_freed - rss_before, 80 * kMiB);

  const int64_t released = ReleaseFreeMallocMemory(MallocFreePageBytes());
  EXPECT_GE(released, 80 * kMiB);
  EXPECT_LT(MallocFreePageBytes(), 16 * kMiB);
  EXPECT_LE(RssBytes(), rss_freed - 80 * kMiB);
}

TEST(AllocatorTcmalloc, AReleaseOfSomeBytesReleasesAtLeastThose) {
  ReleaseFreeMallocMemory(MallocFreePageBytes());
  TouchAndFree96MiB();
  const int64_t free_before = MallocFreePageBytes();
  const int64_t released = ReleaseFreeMallocMemory(16 * kMiB);
  EXPECT_GE(released, 16 * kMiB);
  EXPECT_LE(MallocFreePageBytes(), free_before - 16 * kMiB);
}

TEST(AllocatorTcmalloc, TheReleaserHandsFreePagesBackPastItsThreshold) {
  ReleaseFreeMallocMemory(MallocFreePageBytes());
  FreeMemoryReleaser::Options options;
  options.interval = absl::Milliseconds(20);
  options.window = 3;
  options.threshold_bytes = 32 * kMiB;
  FreeMemoryReleaser releaser(options);
  TouchAndFree96MiB();
  EXPECT_TRUE(dcu::testing::WaitFor([&] { return releaser.ReleasedBytes() >= 80 * kMiB; }, absl::Seconds(10)))
      << "released " << releaser.ReleasedBytes() << " B, free pages " << MallocFreePageBytes() << " B";
  EXPECT_LT(MallocFreePageBytes(), 32 * kMiB);
}

TEST(AllocatorTcmalloc, FreePagesBelowTheThresholdAreKept) {
  ReleaseFreeMallocMemory(MallocFreePageBytes());
  FreeMemoryReleaser::Options options;
  options.interval = absl::Milliseconds(10);
  options.threshold_bytes = 512 * kMiB;  // more than this test ever frees
  FreeMemoryReleaser releaser(options);
  TouchAndFree96MiB();
  absl::SleepFor(absl::Milliseconds(200));  // twenty looks
  EXPECT_EQ(releaser.ReleasedBytes(), 0);
  EXPECT_GE(MallocFreePageBytes(), 80 * kMiB);
}

#else

TEST(AllocatorGlibc, NamesGlibcAndSaysUnknown) {
  EXPECT_EQ(MallocName(), "glibc malloc");
  TouchAndFree96MiB();
  EXPECT_EQ(MallocFreePageBytes(), -1);
  EXPECT_EQ(ReleaseFreeMallocMemory(16 * kMiB), -1);
}

// This process's threads, as the kernel lists them.
int ThreadCount() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(AllocatorGlibc, TheReleaserStartsNoThread) {
  // Released bytes would say nothing here: under glibc a release returns -1
  // whether a thread looks or not. The thread itself is what must not exist.
  const int before = ThreadCount();
  FreeMemoryReleaser::Options options;
  options.interval = absl::Milliseconds(10);
  options.threshold_bytes = 0;
  FreeMemoryReleaser releaser(options);
  EXPECT_EQ(ThreadCount(), before);
}

#endif

}  // namespace
}  // namespace dcu::common
