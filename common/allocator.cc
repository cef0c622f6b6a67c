#include "common/allocator.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <deque>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace dcu::common {
namespace {

// gperftools' C entry points, looked up rather than called through its
// headers: the binaries that do not link tcmalloc need neither the headers
// nor the library to build this (malloc_extension_c.h declares them).
using GetNumericPropertyFn = int (*)(const char*, size_t*);
using ReleaseToSystemFn = void (*)(size_t);

template <typename Fn>
Fn Lookup(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// One of tcmalloc's numeric properties (malloc_extension.h lists them), or
// -1 under any other malloc.
int64_t Property(const char* name) {
  static const auto get = Lookup<GetNumericPropertyFn>("MallocExtension_GetNumericProperty");
  size_t bytes = 0;
  if (get == nullptr || !get(name, &bytes)) return -1;
  return static_cast<int64_t>(bytes);
}

}  // namespace

std::string MallocName() {
  using TcVersion = const char* (*)(int*, int*, const char**);
  if (auto version = Lookup<TcVersion>("tc_version"); version != nullptr) {
    int major = 0;
    int minor = 0;
    const char* patch = nullptr;
    version(&major, &minor, &patch);
    return absl::StrCat("tcmalloc ", major, ".", minor, patch != nullptr ? patch : "");
  }
  return "glibc malloc";
}

int64_t MallocFreePageBytes() { return Property("tcmalloc.pageheap_free_bytes"); }

int64_t MallocInUseBytes() { return Property("generic.current_allocated_bytes"); }

int64_t ReleaseFreeMallocMemory(int64_t bytes) {
  static const auto release = Lookup<ReleaseToSystemFn>("MallocExtension_ReleaseToSystem");
  const int64_t before = Property("tcmalloc.pageheap_unmapped_bytes");
  if (release == nullptr || before < 0) return -1;
  constexpr int64_t kStep = int64_t{8} << 20;
  for (int64_t left = bytes; left > 0; left -= kStep) {
    release(static_cast<size_t>(std::min(left, kStep)));
  }
  // Unmapped bytes can also fall meanwhile (another thread reusing them).
  return std::max<int64_t>(Property("tcmalloc.pageheap_unmapped_bytes") - before, 0);
}

FreeMemoryReleaser::FreeMemoryReleaser(Options options) : options_(options) {
  if (MallocFreePageBytes() < 0 || options_.interval <= absl::ZeroDuration()) return;
  thread_ = std::thread([this] { Loop(); });
}

FreeMemoryReleaser::~FreeMemoryReleaser() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

int64_t FreeMemoryReleaser::ReleasedBytes() const {
  absl::MutexLock lock(&mu_);
  return released_;
}

void FreeMemoryReleaser::Loop() {
  // The free pages seen at the last `window` looks; their least stayed free
  // all along.
  std::deque<int64_t> seen;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.interval)) return;
    }
    seen.push_back(MallocFreePageBytes());
    if (static_cast<int>(seen.size()) > std::max(options_.window, 1)) seen.pop_front();
    if (static_cast<int>(seen.size()) < options_.window) continue;
    const int64_t idle = *std::min_element(seen.begin(), seen.end());
    if (idle < options_.threshold_bytes) continue;
    const int64_t released = ReleaseFreeMallocMemory(idle);
    seen.clear();
    if (released <= 0) continue;
    // At most once per burst that freed more than the threshold: an
    // operator comparing the RSS with what is in use sees why it fell.
    DCU_LOG_INFO("handed ", released >> 20, " MiB of free pages back to the kernel (",
                 MallocInUseBytes() >> 20, " MiB in use)");
    absl::MutexLock lock(&mu_);
    released_ += released;
  }
}

}  // namespace dcu::common
