#include "controller/service/owned_threads.h"

#include <atomic>
#include <memory>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

TEST(OwnedThreadsTest, TasksRunConcurrentlyAndFinishedOnesAreReaped) {
  OwnedThreads threads;
  absl::Notification release;
  std::atomic<int> started{0};
  // Two tasks that wait for each other's start: a pool of one would hang.
  for (int i = 0; i < 2; ++i) {
    threads.Run([&] {
      started.fetch_add(1);
      release.WaitForNotification();
    });
  }
  while (started.load() < 2) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(threads.RunningForTest(), 2u);
  release.Notify();
  while (threads.RunningForTest() > 0) absl::SleepFor(absl::Milliseconds(1));
  // Run after tasks finished (it joins their threads first) still runs.
  absl::Notification third;
  threads.Run([&] { third.Notify(); });
  third.WaitForNotification();
}

TEST(OwnedThreadsTest, DestructorWaitsForRunningTasks) {
  std::atomic<bool> finished{false};
  auto threads = std::make_unique<OwnedThreads>();
  absl::Notification started;
  threads->Run([&] {
    started.Notify();
    absl::SleepFor(absl::Milliseconds(200));
    finished.store(true);
  });
  started.WaitForNotification();
  threads.reset();
  // A detached thread would still be sleeping here.
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace dcu::controller
