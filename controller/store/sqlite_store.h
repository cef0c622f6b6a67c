#pragma once

#include "controller/store/sql_store.h"
#include "controller/store/sqlite_db.h"

namespace dcu::controller {

using SqliteStore = SqlStore<SqliteDatabase>;
extern template class SqlStore<SqliteDatabase>;

}  // namespace dcu::controller
