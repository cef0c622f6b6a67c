#pragma once

#include <memory>

#include "controller/store/api_key_store.h"

namespace dcu::controller {

// ApiKeyStore over one database.
// `Db` is SqliteDatabase (sqlite_db.h, the embedded default) or PgDatabase
// (pg_db.h): one set of SQL for both, written to read the same in both
// dialects; reads go through Db::WithConnection, one-statement writes
// through Db::Write, batches through Db::Transaction (on PostgreSQL every
// write is a transaction, so the leader's write fence guards it).
// Instantiated once per database in sqlite_*.cc and pg_*.cc.
template <typename Db>
class SqlApiKeyStore : public ApiKeyStore {
 public:
  explicit SqlApiKeyStore(std::shared_ptr<Db> db) : db_(std::move(db)) {}
  absl::Status CreateApiKey(const dcufleet::v1::ApiKey& key) override;
  absl::StatusOr<std::vector<dcufleet::v1::ApiKey>> ListApiKeys() override;
  absl::Status RevokeApiKey(const std::string& name) override;

 private:
  std::shared_ptr<Db> db_;
};

}  // namespace dcu::controller
