// The textproto catalog loader (stacks, models, evidence) on arbitrary text.
#include <cstdint>

#include "modelkit/catalog_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = dcu::modelkit::ParseCatalogText("fuzz.txtpb", text);
  if (parsed.ok()) (void)parsed->ByteSizeLong();
  return 0;
}
