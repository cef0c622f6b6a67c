#pragma once

#include "controller/store/sql_deployment_store.h"
#include "controller/store/sqlite_db.h"

namespace dcu::controller {

using SqliteDeploymentStore = SqlDeploymentStore<SqliteDatabase>;
extern template class SqlDeploymentStore<SqliteDatabase>;

}  // namespace dcu::controller
