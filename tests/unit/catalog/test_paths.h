#pragma once

#include <cstdlib>
#include <string>

namespace dcu::testing {

// The source root: tests run there (dcu_test), DCU_SOURCE_DIR says so too.
inline std::string SourceDir() {
  const char* d = std::getenv("DCU_SOURCE_DIR");
  return d != nullptr && *d ? std::string(d) : std::string(".");
}
inline std::string CatalogDir() { return SourceDir() + "/deploy/catalog"; }
inline std::string ConfigsDir() { return SourceDir() + "/tests/data/model-configs"; }

}  // namespace dcu::testing
