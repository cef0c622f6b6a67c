#pragma once

#include <memory>

#include "controller/store/api_key_store.h"
#include "controller/store/pg_db.h"

namespace dcu::controller {

// The twin of SqliteApiKeyStore; every write a Transaction (fenced).
class PgApiKeyStore : public ApiKeyStore {
 public:
  explicit PgApiKeyStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  absl::Status CreateApiKey(const dcufleet::v1::ApiKey& key) override;
  absl::StatusOr<std::vector<dcufleet::v1::ApiKey>> ListApiKeys() override;
  absl::Status RevokeApiKey(const std::string& name) override;

 private:
  std::shared_ptr<PgDatabase> db_;
};

}  // namespace dcu::controller
