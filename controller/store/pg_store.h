#pragma once

#include "controller/store/pg_db.h"
#include "controller/store/sql_store.h"

namespace dcu::controller {

using PgStore = SqlStore<PgDatabase>;
extern template class SqlStore<PgDatabase>;

}  // namespace dcu::controller
