#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

// Lower-case hex SHA-256 of `data` (64 characters). Used for token hashes
// (auth), config fingerprints (the model config audit) and short stable ids
// derived from them. "" only if OpenSSL's digest itself fails.
std::string Sha256Hex(absl::string_view data);

// SHA-256 fed in pieces (a model shard streamed in chunks). OpenSSL stays
// private to hash.cc.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(absl::string_view data);
  // Lower-case hex of everything fed; "" if OpenSSL fails. Once only.
  std::string FinalHex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `bytes` bytes from OpenSSL's CSPRNG as lower-case hex (API keys, tokens).
// UNAVAILABLE when the generator cannot be seeded.
absl::StatusOr<std::string> RandomHex(size_t bytes);

}  // namespace dcu::common
