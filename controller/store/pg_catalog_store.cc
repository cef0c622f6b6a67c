// SqlCatalogStore over PgDatabase: the one instantiation of sql_catalog_store_impl.h for it.
#include "controller/store/pg_catalog_store.h"

#include "controller/store/sql_catalog_store_impl.h"

namespace dcu::controller {

template class SqlCatalogStore<PgDatabase>;

}  // namespace dcu::controller
