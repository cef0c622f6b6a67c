#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

// Lower-case hex SHA-256 of `data` (64 characters). Used for token hashes
// (auth), config fingerprints (the model config audit) and short stable ids
// derived from them. "" only if OpenSSL's digest itself fails.
std::string Sha256Hex(absl::string_view data);

// `bytes` bytes from OpenSSL's CSPRNG as lower-case hex (API keys, tokens).
// UNAVAILABLE when the generator cannot be seeded.
absl::StatusOr<std::string> RandomHex(size_t bytes);

}  // namespace dcu::common
