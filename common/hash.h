#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace dcu::common {

// Lower-case hex SHA-256 of `data` (64 characters). Used for token hashes
// (auth), config fingerprints (the model config audit) and short stable ids
// derived from them. "" only if OpenSSL's digest itself fails.
std::string Sha256Hex(absl::string_view data);

}  // namespace dcu::common
