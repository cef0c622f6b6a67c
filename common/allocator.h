#pragma once

#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace dcu::common {

// The malloc this process runs on, as the start-up line names it:
// "tcmalloc 2.10" when gperftools' tcmalloc is linked in (dcu-controller
// links it: BENCHMARKS.md, "An allocator for the controller"), otherwise
// "glibc malloc" (a build configured with -DDCU_CONTROLLER_TCMALLOC=OFF, a
// sanitizer build, every other binary).
std::string MallocName();

// Bytes tcmalloc holds in free whole pages that are still mapped (its page
// heap's free lists): memory the process's RSS counts and nothing uses.
// -1 under any other malloc.
int64_t MallocFreePageBytes();

// Bytes the program has allocated and not freed, as tcmalloc counts them;
// -1 under any other malloc.
int64_t MallocInUseBytes();

// Hands back at least `bytes` of tcmalloc's free pages to the kernel
// (madvise), so they leave the RSS (a later allocation faults them in
// again), a few MiB per call: each call holds tcmalloc's page-heap lock,
// which every thread that needs whole pages waits on. Returns the bytes
// released, or -1 under any other malloc (nothing done).
int64_t ReleaseFreeMallocMemory(int64_t bytes);

// tcmalloc keeps the pages a burst freed: after a 20,000-placement wave at
// 10,000 agents the controller's RSS was 1,045 MiB of which 257 MiB were
// free pages, and it stayed there, idle (tcmalloc's incremental release
// had returned 0 bytes; BENCHMARKS.md, "Free pages handed back"). This
// thread looks every `interval` and hands back the pages that stayed free
// over the last `window` looks, when they are at least `threshold` bytes:
// pages a burst in progress keeps reusing are left to it (giving them back
// would only have them faulted in again), and the RSS follows what is in
// use within a window once the burst is over. Does nothing under any
// other malloc.
class FreeMemoryReleaser {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(1);
    int window = 3;
    int64_t threshold_bytes = int64_t{64} << 20;
  };
  explicit FreeMemoryReleaser(Options options);
  ~FreeMemoryReleaser();  // stops and joins the thread
  FreeMemoryReleaser(const FreeMemoryReleaser&) = delete;
  FreeMemoryReleaser& operator=(const FreeMemoryReleaser&) = delete;

  // Bytes handed back so far, over every release.
  int64_t ReleasedBytes() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop();

  const Options options_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t released_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace dcu::common
