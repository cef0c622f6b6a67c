#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "controller/core/knowledge.h"
#include "controller/store/catalog_store.h"

namespace dcu::controller {

// Knowledge over the catalog store: stacks and evidence-derived verdicts,
// model fingerprints, the config audit and remediation, memory plans, launch
// rendering. Stacks and evidence are cached briefly: the scheduler asks per
// node and arch, the store changes only on import and launch outcomes.
class CatalogKnowledge : public Knowledge {
 public:
  CatalogKnowledge(CatalogStore* store, const common::Clock* clock);

  absl::StatusOr<ModelFacts> Model(const std::string& model) override;
  void PlansForArch(const std::string& model, const std::string& arch,
                    std::vector<dcufleet::v1::Plan>* plans,
                    std::vector<dcufleet::v1::Plan>* excluded) override;
  MemoryCheck CheckMemory(const dcufleet::v1::DeploymentSpec& spec, int tp,
                          int64_t device_total) override;
  std::string ModelPathOnNode(const std::string& model, const dcufleet::v1::NodeView& node) override;
  ModelPreparation PrepareModel(const std::string& model, const dcufleet::v1::NodeView& node,
                                const std::string& model_path, const dcufleet::v1::Plan& plan,
                                int tp) override;
  absl::StatusOr<dcufleet::v1::InstanceSpec> RenderLaunch(
      const dcufleet::v1::DeploymentSpec& spec, const dcufleet::v1::Plan& plan,
      const dcufleet::v1::Placement& placement, const std::string& model_path) override;
  int64_t KvCacheBytes(const dcufleet::v1::DeploymentSpec& spec, int tp,
                       int64_t device_total) override;
  void RecordOutcome(const LaunchOutcomeRecord& outcome) override;
  void ObserveNodes(const std::vector<const dcufleet::v1::NodeView*>& nodes) override;
  std::map<std::string, std::string> DiagnosisFacts(const dcufleet::v1::DeploymentSpec& spec,
                                                    const dcufleet::v1::Attempt& attempt,
                                                    int64_t device_total) override;

  // Drops the cache (after an import).
  void Invalidate();

 private:
  struct Snapshot {
    std::vector<dcufleet::v1::Stack> stacks;
    std::vector<dcufleet::v1::Evidence> evidence;
    std::vector<dcufleet::v1::ModelEntry> models;
  };
  Snapshot Load() ABSL_LOCKS_EXCLUDED(mu_);
  const dcufleet::v1::ModelDirectory* FindModelDir(const std::string& model,
                                                   const dcufleet::v1::NodeView& node,
                                                   const Snapshot& snap);

  CatalogStore* const store_;
  const common::Clock* const clock_;
  absl::Mutex mu_;
  bool valid_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time loaded_at_ ABSL_GUARDED_BY(mu_);
  Snapshot cache_ ABSL_GUARDED_BY(mu_);
  // Node -> fingerprint of the models and environments last recorded.
  std::map<std::string, std::string> observed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::controller
