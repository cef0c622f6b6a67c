#pragma once

#include <memory>

#include "controller/store/deployment_store.h"

namespace dcu::controller {

// DeploymentStore over one database.
// `Db` is SqliteDatabase (sqlite_db.h, the embedded default) or PgDatabase
// (pg_db.h): one set of SQL for both, written to read the same in both
// dialects; reads go through Db::WithConnection, one-statement writes
// through Db::Write, batches through Db::Transaction (on PostgreSQL every
// write is a transaction, so the leader's write fence guards it).
// Instantiated once per database in sqlite_*.cc and pg_*.cc.
template <typename Db>
class SqlDeploymentStore : public DeploymentStore {
 public:
  explicit SqlDeploymentStore(std::shared_ptr<Db> db) : db_(std::move(db)) {}
  absl::Status PutDeployment(const dcufleet::v1::Deployment& deployment) override;
  absl::Status PutDeployments(const std::vector<dcufleet::v1::Deployment>& deployments) override;
  absl::Status DeleteDeployments(const std::vector<std::string>& keys) override;
  absl::StatusOr<std::vector<dcufleet::v1::Deployment>> ListDeployments() override;
  absl::Status PutNodeGeneration(const std::string& node, int64_t generation) override;
  absl::Status PutNodeGenerations(
      const std::vector<std::pair<std::string, int64_t>>& generations) override;
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ListNodeGenerations() override;

 private:
  std::shared_ptr<Db> db_;
};

}  // namespace dcu::controller
