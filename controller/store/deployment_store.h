#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/deploy.pb.h"

namespace dcu::controller {

// Durable deployments. Each Put replaces the whole document atomically.
class DeploymentStore {
 public:
  virtual ~DeploymentStore() = default;
  virtual absl::Status PutDeployment(const dcufleet::v1::Deployment& deployment) = 0;
  // Writes several documents in one transaction (the reconciler batches).
  virtual absl::Status PutDeployments(const std::vector<dcufleet::v1::Deployment>& deployments) = 0;
  virtual absl::Status DeleteDeployment(const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<dcufleet::v1::Deployment>> ListDeployments() = 0;
  // The last assignment generation of each node.
  virtual absl::Status PutNodeGeneration(const std::string& node, int64_t generation) = 0;
  // Several nodes' generations in one transaction (a pass that sends many
  // assignments).
  virtual absl::Status PutNodeGenerations(
      const std::vector<std::pair<std::string, int64_t>>& generations) {
    for (const auto& [node, gen] : generations) {
      absl::Status s = PutNodeGeneration(node, gen);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  virtual absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ListNodeGenerations() = 0;
};

}  // namespace dcu::controller
