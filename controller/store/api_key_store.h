#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dcufleet/v1/serving.pb.h"

namespace dcu::controller {

// The gateways' API keys (issue 17): name, SHA-256 and scope, never the key.
class ApiKeyStore {
 public:
  virtual ~ApiKeyStore() = default;
  // ALREADY_EXISTS when the name is taken.
  virtual absl::Status CreateApiKey(const dcufleet::v1::ApiKey& key) = 0;
  // Every key, by name, with its hash.
  virtual absl::StatusOr<std::vector<dcufleet::v1::ApiKey>> ListApiKeys() = 0;
  // NOT_FOUND when there is no such key.
  virtual absl::Status RevokeApiKey(const std::string& name) = 0;
};

}  // namespace dcu::controller
