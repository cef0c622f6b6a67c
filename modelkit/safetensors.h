#pragma once

// The safetensors file format, read as the safetensors library reads it
// (https://github.com/huggingface/safetensors, safetensors/src/tensor.rs):
//
//   8 bytes   N, little-endian u64
//   N bytes   UTF-8 JSON object: tensor name -> {"dtype": "F16", "shape": [..],
//             "data_offsets": [begin, end]}, plus an optional "__metadata__"
//             (string -> string)
//   the rest  the data buffer; offsets are relative to its first byte (the
//             byte after the header)
//
// Checked like the library's `SafeTensors::read_metadata`/`validate`: N at
// most 100,000,000 (MAX_HEADER_SIZE), the ranges sorted by begin cover the
// data buffer from 0 without holes or overlaps, and each range is exactly
// shape x dtype bytes. Everything here reads only the header, never the
// weights, so it is cheap on a 62 GB directory. Input is hostile: every
// figure is bounded and checked for overflow, and nothing throws.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::modelkit {

// safetensors' MAX_HEADER_SIZE.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// Bits per element of a safetensors dtype name ("BF16" -> 16, "F4" -> 4);
// nullopt for a name this build does not know. Sub-byte dtypes (F4, F6_*)
// are sized in bits, as the library does since 0.6.
std::optional<int> SafetensorsDtypeBits(absl::string_view dtype);

// True for the floating dtypes a checkpoint stores unquantized weights in
// (F16, BF16, F32, F64): the shapes of those are the model's shapes.
bool IsUnquantizedFloat(absl::string_view dtype);

struct SafetensorsTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  // Relative to the data buffer; end - begin == elements x bits / 8.
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  // N, the JSON header's length.
  uint64_t header_bytes = 0;
  // Sorted by begin (the order of the data buffer).
  std::vector<SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
  // The data buffer's length the header implies (the last range's end).
  uint64_t data_bytes = 0;
  // Tensors whose dtype is unknown (not in `tensors`' size check; their
  // ranges still take part in the coverage check).
  std::vector<std::string> unknown_dtype_tensors;

  // 8 + N + data_bytes: the file's exact length.
  uint64_t ExpectedFileBytes() const { return 8 + header_bytes + data_bytes; }
};

// Parses the N bytes of JSON after the length. INVALID_ARGUMENT, naming the
// tensor and the figures, for: JSON that is not JSON (with the byte offset),
// not an object, a duplicate key, an entry without a string dtype, a shape
// that is not an array of non-negative integers, data_offsets that are not
// two non-negative integers with begin <= end, __metadata__ that is not a
// string map, ranges that overlap, leave a hole or do not start at 0, and a
// range whose length is not shape x dtype. An unknown dtype is not an error
// here (it is listed in unknown_dtype_tensors): the caller decides.
absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeaderJson(absl::string_view json,
                                                             uint64_t header_bytes);

// Parses a header from the first bytes of a file of `file_bytes` bytes:
// `prefix` must hold at least the 8-byte length and, when the file is long
// enough, the N header bytes. DATA_LOSS when the file is shorter than 8
// bytes or than 8 + N ("truncated inside its header"); INVALID_ARGUMENT when
// N is over kSafetensorsMaxHeaderBytes, or as ParseSafetensorsHeaderJson.
// Does not compare the file's length with ExpectedFileBytes(): that is the
// caller's finding (truncated or padded).
absl::StatusOr<SafetensorsHeader> ParseSafetensorsPrefix(absl::string_view prefix,
                                                         uint64_t file_bytes);

// Reads the header of the file at `path` (8 + N bytes, nothing more) and
// parses it. `file_bytes` gets the file's length. NOT_FOUND/PERMISSION_DENIED
// and friends when it cannot be read; otherwise as ParseSafetensorsPrefix.
absl::StatusOr<SafetensorsHeader> ReadSafetensorsHeader(const std::string& path,
                                                        uint64_t* file_bytes);

}  // namespace dcu::modelkit
