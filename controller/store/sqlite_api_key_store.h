#pragma once

#include "controller/store/sql_api_key_store.h"
#include "controller/store/sqlite_db.h"

namespace dcu::controller {

using SqliteApiKeyStore = SqlApiKeyStore<SqliteDatabase>;
extern template class SqlApiKeyStore<SqliteDatabase>;

}  // namespace dcu::controller
