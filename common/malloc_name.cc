#include "common/malloc_name.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace dcu::common {

std::string MallocName() {
  // Looked up, not called through a header: the binaries that do not link
  // tcmalloc need no gperftools headers to build this.
  using TcVersion = const char* (*)(int*, int*, const char**);
  if (void* sym = dlsym(RTLD_DEFAULT, "tc_version"); sym != nullptr) {
    int major = 0;
    int minor = 0;
    const char* patch = nullptr;
    reinterpret_cast<TcVersion>(sym)(&major, &minor, &patch);
    return absl::StrCat("tcmalloc ", major, ".", minor, patch != nullptr ? patch : "");
  }
  return "glibc malloc";
}

}  // namespace dcu::common
