#pragma once

#include "controller/store/pg_db.h"
#include "controller/store/sql_deployment_store.h"

namespace dcu::controller {

using PgDeploymentStore = SqlDeploymentStore<PgDatabase>;
extern template class SqlDeploymentStore<PgDatabase>;

}  // namespace dcu::controller
