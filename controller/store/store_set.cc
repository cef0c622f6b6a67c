#include "controller/store/store_set.h"

#include "common/status_util.h"
#include "controller/store/pg_api_key_store.h"
#include "controller/store/pg_catalog_store.h"
#include "controller/store/pg_deployment_store.h"
#include "controller/store/pg_store.h"
#include "controller/store/sqlite_api_key_store.h"
#include "controller/store/sqlite_catalog_store.h"
#include "controller/store/sqlite_deployment_store.h"
#include "controller/store/sqlite_store.h"
#include "migrations/embedded_migrations.h"

namespace dcu::controller {
namespace {

// Owns `p` in `set` and returns it.
template <typename T>
T* Keep(StoreSet& set, std::shared_ptr<T> p) {
  set.owned.push_back(p);
  return p.get();
}

}  // namespace

absl::StatusOr<StoreSet> OpenStores(const std::string& db, PgOptions pg_options) {
  StoreSet set;
  if (IsPostgresUrl(db)) {
    set.backend = StoreBackend::kPostgres;
    DCU_ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> conn, PgDatabase::Open(db, pg_options));
    DCU_RETURN_IF_ERROR(
        conn->Migrate(migrations::EmbeddedMigrations(migrations::Dialect::kPostgres)));
    set.postgres = std::move(conn);
    PgStore* nodes = Keep(set, std::make_shared<PgStore>(set.postgres));
    set.nodes = nodes;
    set.events = nodes;
    set.deployments = Keep(set, std::make_shared<PgDeploymentStore>(set.postgres));
    set.catalog = Keep(set, std::make_shared<PgCatalogStore>(set.postgres));
    set.api_keys = Keep(set, std::make_shared<PgApiKeyStore>(set.postgres));
    return set;
  }
  DCU_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store, SqliteStore::Open(db));
  set.sqlite = store->database();
  SqliteStore* nodes = Keep(set, std::shared_ptr<SqliteStore>(std::move(store)));
  set.nodes = nodes;
  set.events = nodes;
  set.deployments = Keep(set, std::make_shared<SqliteDeploymentStore>(set.sqlite));
  set.catalog = Keep(set, std::make_shared<SqliteCatalogStore>(set.sqlite));
  set.api_keys = Keep(set, std::make_shared<SqliteApiKeyStore>(set.sqlite));
  return set;
}

absl::StatusOr<int> StoreSet::SchemaVersion() const {
  return postgres ? postgres->SchemaVersion() : sqlite->SchemaVersion();
}

void StoreSet::SetTransactionObserver(std::function<void(absl::Duration, bool)> observer) const {
  if (postgres) postgres->SetTransactionObserver(std::move(observer));
  if (sqlite) sqlite->SetTransactionObserver(std::move(observer));
}

}  // namespace dcu::controller
