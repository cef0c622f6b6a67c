#pragma once

#include "controller/store/pg_db.h"
#include "controller/store/sql_api_key_store.h"

namespace dcu::controller {

using PgApiKeyStore = SqlApiKeyStore<PgDatabase>;
extern template class SqlApiKeyStore<PgDatabase>;

}  // namespace dcu::controller
