// libFuzzer target for catalog files (protobuf text format + validation):
// bad input is rejected with a message, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "controller/catalog/catalog_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto catalog = dcu::controller::ParseCatalogText("fuzz.txtpb", text);
  if (!catalog.ok() && catalog.status().message().empty()) __builtin_trap();
  return 0;
}
