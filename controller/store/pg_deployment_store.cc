// SqlDeploymentStore over PgDatabase: the one instantiation of sql_deployment_store_impl.h for it.
#include "controller/store/pg_deployment_store.h"

#include "controller/store/sql_deployment_store_impl.h"

namespace dcu::controller {

template class SqlDeploymentStore<PgDatabase>;

}  // namespace dcu::controller
