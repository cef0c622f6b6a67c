#pragma once

#include <memory>

#include "controller/store/deployment_store.h"
#include "controller/store/pg_db.h"

namespace dcu::controller {

// The twin of SqliteDeploymentStore; every write a Transaction (fenced).
class PgDeploymentStore : public DeploymentStore {
 public:
  explicit PgDeploymentStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  absl::Status PutDeployment(const dcufleet::v1::Deployment& deployment) override;
  absl::Status PutDeployments(const std::vector<dcufleet::v1::Deployment>& deployments) override;
  absl::Status DeleteDeployment(const std::string& key) override;
  absl::StatusOr<std::vector<dcufleet::v1::Deployment>> ListDeployments() override;
  absl::Status PutNodeGeneration(const std::string& node, int64_t generation) override;
  absl::Status PutNodeGenerations(
      const std::vector<std::pair<std::string, int64_t>>& generations) override;
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ListNodeGenerations() override;

 private:
  std::shared_ptr<PgDatabase> db_;
};

}  // namespace dcu::controller
