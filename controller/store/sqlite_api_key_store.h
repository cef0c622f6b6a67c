#pragma once

#include <memory>

#include "controller/store/api_key_store.h"
#include "controller/store/sqlite_db.h"

namespace dcu::controller {

class SqliteApiKeyStore : public ApiKeyStore {
 public:
  explicit SqliteApiKeyStore(std::shared_ptr<SqliteDatabase> db) : db_(std::move(db)) {}
  absl::Status CreateApiKey(const dcufleet::v1::ApiKey& key) override;
  absl::StatusOr<std::vector<dcufleet::v1::ApiKey>> ListApiKeys() override;
  absl::Status RevokeApiKey(const std::string& name) override;

 private:
  std::shared_ptr<SqliteDatabase> db_;
};

}  // namespace dcu::controller
