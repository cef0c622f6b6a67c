#pragma once

#include "controller/store/pg_db.h"
#include "controller/store/sql_catalog_store.h"

namespace dcu::controller {

using PgCatalogStore = SqlCatalogStore<PgDatabase>;
extern template class SqlCatalogStore<PgDatabase>;

}  // namespace dcu::controller
