#pragma once

#include <string>

namespace dcu::common {

// The malloc this process runs on, as the start-up line names it:
// "tcmalloc 2.10" when gperftools' tcmalloc is linked in (dcu-controller
// links it: BENCHMARKS.md, "An allocator for the controller"), otherwise
// "glibc malloc" (a build configured with -DDCU_CONTROLLER_TCMALLOC=OFF, a
// sanitizer build, every other binary).
std::string MallocName();

}  // namespace dcu::common
