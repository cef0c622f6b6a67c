#pragma once

#include "controller/store/sql_catalog_store.h"
#include "controller/store/sqlite_db.h"

namespace dcu::controller {

using SqliteCatalogStore = SqlCatalogStore<SqliteDatabase>;
extern template class SqlCatalogStore<SqliteDatabase>;

}  // namespace dcu::controller
