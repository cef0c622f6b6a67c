// SqlStore over SqliteDatabase: the one instantiation of sql_store_impl.h for it.
#include "controller/store/sqlite_store.h"

#include "controller/store/sql_store_impl.h"

namespace dcu::controller {

template class SqlStore<SqliteDatabase>;

}  // namespace dcu::controller
