// SqlApiKeyStore over SqliteDatabase: the one instantiation of sql_api_key_store_impl.h for it.
#include "controller/store/sqlite_api_key_store.h"

#include "controller/store/sql_api_key_store_impl.h"

namespace dcu::controller {

template class SqlApiKeyStore<SqliteDatabase>;

}  // namespace dcu::controller
