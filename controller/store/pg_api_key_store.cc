// SqlApiKeyStore over PgDatabase: the one instantiation of sql_api_key_store_impl.h for it.
#include "controller/store/pg_api_key_store.h"

#include "controller/store/sql_api_key_store_impl.h"

namespace dcu::controller {

template class SqlApiKeyStore<PgDatabase>;

}  // namespace dcu::controller
