#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dcu::gateway {

// API keys, hashed at rest. One key per line of the keys file:
//
//   NAME SHA256_HEX SCOPE        # SCOPE: "*" (every model) or "m1,m2"
//
// SHA256_HEX is the SHA-256 of the key a client sends as
// "Authorization: Bearer KEY" (`printf %s KEY | sha256sum`). The key itself
// is never stored, compared in the clear or logged; only NAME is.
class ApiKeyStore {
 public:
  enum class Verdict { kAllowed, kMissing, kUnknown, kOutOfScope };

  // INVALID_ARGUMENT naming the line for a malformed one.
  static absl::StatusOr<ApiKeyStore> Parse(const std::string& text);
  static absl::StatusOr<ApiKeyStore> Load(const std::string& path);
  // Adds one key (from the controller's snapshot); INVALID_ARGUMENT for a
  // hash that is not 64 hex digits or an empty scope.
  absl::Status Add(const std::string& name, const std::string& sha256_hex, bool all_models,
                   const std::vector<std::string>& models);

  // Checks an Authorization header value against `model` (a deployment or
  // served name; a key scoped to either admits the request).
  Verdict Check(const std::string& authorization, const std::vector<std::string>& model_names,
                std::string* key_name) const;
  size_t size() const { return keys_.size(); }

  // Both stores' word on a request (the gateway's --api-keys file and the
  // keys the controller manages): allowed when either allows it; otherwise
  // out of scope when either knows the key; otherwise missing or unknown.
  static Verdict CheckEither(const ApiKeyStore* a, const ApiKeyStore* b,
                             const std::string& authorization,
                             const std::vector<std::string>& model_names, std::string* key_name);

 private:
  struct Key {
    std::string name;
    std::string sha256_hex;
    bool all_models = false;
    std::set<std::string> models;
  };
  std::vector<Key> keys_;
};

}  // namespace dcu::gateway
