#pragma once

// Well-formed UTF-8 (RFC 3629), the one check: proto strings, JSON and YAML
// must be UTF-8, and what people and files hand us need not be. Header-only.

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace dcu::common {

// The length (1-4) of the well-formed UTF-8 sequence starting at s[i], or 0
// when none starts there: a stray continuation byte, an overlong form, a
// surrogate, a code point above U+10FFFF, or a sequence cut short.
inline size_t Utf8SequenceAt(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t more = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the first continuation byte
  if (c >= 0xC2 && c <= 0xDF) {
    more = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    more = 2;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    more = 3;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + more >= s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k <= more; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return more + 1;
}

// The offset of the first byte of `s` that is not well-formed UTF-8, or
// std::string::npos.
inline size_t FirstInvalidUtf8Byte(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string::npos;
}

}  // namespace dcu::common
