#pragma once

// Every store of one --db, behind the interfaces (issue 21): the one place
// that decides between the backends. "postgres://…" or "postgresql://…" is
// PostgreSQL (pg_db.h); anything else is an SQLite file (sqlite_db.h), the
// embedded default. The stores of one set share one connection.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/api_key_store.h"
#include "controller/store/catalog_store.h"
#include "controller/store/deployment_store.h"
#include "controller/store/node_store.h"
#include "controller/store/pg_db.h"
#include "controller/store/sqlite_db.h"

namespace dcu::controller {

enum class StoreBackend { kSqlite, kPostgres };

struct StoreSet {
  StoreBackend backend = StoreBackend::kSqlite;
  NodeStore* nodes = nullptr;
  EventLog* events = nullptr;
  DeploymentStore* deployments = nullptr;
  CatalogStore* catalog = nullptr;
  ApiKeyStore* api_keys = nullptr;
  // Exactly one is set.
  std::shared_ptr<SqliteDatabase> sqlite;
  std::shared_ptr<PgDatabase> postgres;
  // What the pointers above point into.
  std::vector<std::shared_ptr<void>> owned;

  absl::StatusOr<int> SchemaVersion() const;
  // Told how long each write transaction took (the store latency histogram).
  void SetTransactionObserver(std::function<void(absl::Duration, bool ok)> observer) const;
};

// Opens (SQLite: creating the file if needed) and migrates. Errors name the
// file or the URL (without its password).
absl::StatusOr<StoreSet> OpenStores(const std::string& db, PgOptions pg_options = {});

}  // namespace dcu::controller
