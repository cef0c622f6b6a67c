// SqlStore over PgDatabase: the one instantiation of sql_store_impl.h for it.
#include "controller/store/pg_store.h"

#include "controller/store/sql_store_impl.h"

namespace dcu::controller {

template class SqlStore<PgDatabase>;

}  // namespace dcu::controller
