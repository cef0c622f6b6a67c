#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/deploy.pb.h"

namespace dcu::controller {

// A deployment of N replicas is N documents (controller/core/replica_set.h);
// each is stored under its own key: "NAME" for replica 0 (the key a
// one-replica deployment always had), "NAME#K" for replica K. '#' is not
// allowed in names and sorts before every character that is, so the
// replicas of NAME are contiguous in key order, right after NAME.
inline std::string ReplicaKey(absl::string_view name, int replica) {
  return replica == 0 ? std::string(name) : absl::StrCat(name, "#", replica);
}
inline std::string ReplicaKey(const dcufleet::v1::Deployment& d) {
  return ReplicaKey(d.spec().name(), d.replica());
}

// Durable deployments. Each Put replaces the whole document atomically.
class DeploymentStore {
 public:
  virtual ~DeploymentStore() = default;
  virtual absl::Status PutDeployment(const dcufleet::v1::Deployment& deployment) = 0;
  // Writes several documents in one transaction (the reconciler batches).
  virtual absl::Status PutDeployments(const std::vector<dcufleet::v1::Deployment>& deployments) = 0;
  // Deletes the documents under `keys` (ReplicaKeys) in one transaction: a
  // reconcile pass forgetting 200 deleted replicas commits once, not 200
  // times. A key with no document is not an error.
  virtual absl::Status DeleteDeployments(const std::vector<std::string>& keys) = 0;
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
