// The safetensors header parser (issue 19) on arbitrary bytes taken as the
// start of a shard: the 8-byte length, the JSON header, what follows. The
// file length is the input's own, and also claimed much larger (a sparse
// 4 GB shard whose header is all that was read), so both the truncation
// and the parse paths run.
#include <cstdint>

#include "modelkit/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const uint64_t lengths[] = {static_cast<uint64_t>(size), static_cast<uint64_t>(size) + (4ull << 30)};
  for (uint64_t file_bytes : lengths) {
    auto h = dcu::modelkit::ParseSafetensorsPrefix(bytes, file_bytes);
    if (h.ok()) {
      uint64_t sum = 0;
      for (const auto& t : h->tensors) sum += t.end - t.begin;
      if (sum != h->data_bytes && h->unknown_dtype_tensors.empty() && !h->tensors.empty()) __builtin_trap();
      (void)h->ExpectedFileBytes();
    }
  }
  // The JSON alone, as if the length had been right.
  (void)dcu::modelkit::ParseSafetensorsHeaderJson(bytes, size);
  return 0;
}
