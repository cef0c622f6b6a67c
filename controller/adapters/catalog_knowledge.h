#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "controller/core/knowledge.h"
#include "modelkit/config_audit.h"
#include "modelkit/learned_fix.h"
#include "modelkit/verdict.h"
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
  std::string ModelDamageOnNode(const std::string& model, const dcufleet::v1::NodeView& node) override;
  std::string RuntimeOnNode(const dcufleet::v1::Plan& plan, const dcufleet::v1::NodeView& node) override;
  ModelPreparation PrepareModel(const std::string& model, const dcufleet::v1::NodeView& node,
                                const std::string& model_path, const dcufleet::v1::Plan& plan,
                                int tp) override;
  absl::StatusOr<dcufleet::v1::InstanceSpec> RenderLaunch(
      const dcufleet::v1::DeploymentSpec& spec, const dcufleet::v1::Plan& plan,
      const dcufleet::v1::Placement& placement, const std::string& model_path,
      int64_t device_total) override;
  int64_t KvCacheBytes(const dcufleet::v1::DeploymentSpec& spec, int tp,
                       int64_t device_total) override;
  void RecordOutcome(const LaunchOutcomeRecord& outcome) override;
  void FlushOutcomes() override ABSL_LOCKS_EXCLUDED(mu_);
  void ObserveNodes(const std::vector<const dcufleet::v1::NodeView*>& nodes) override;
  std::map<std::string, std::string> DiagnosisFacts(const dcufleet::v1::DeploymentSpec& spec,
                                                    const dcufleet::v1::Attempt& attempt,
                                                    int64_t device_total) override;

  // Drops the cache (after an import).
  void Invalidate();

  // How old a broken verdict must be before its stack is tried again (after
  // every other plan). Default 6 h; `dcu-controller --requalify-after`.
  void SetRequalifyAfter(absl::Duration d) { requalify_after_ = d; }

 private:
  // Stacks and models as of the last load: immutable, shared by readers.
  struct Snapshot {
    std::vector<dcufleet::v1::Stack> stacks;
    std::map<std::string, size_t> stack_index;
    std::vector<dcufleet::v1::ModelEntry> models;
    std::map<std::string, size_t> model_index;
    // For matching directory names against the catalog's models.
    modelkit::AuditOptions audit;
    const dcufleet::v1::Stack* Stack(const std::string& id) const {
      auto it = stack_index.find(id);
      return it == stack_index.end() ? nullptr : &stacks[it->second];
    }
    const dcufleet::v1::ModelEntry* Model(const std::string& name) const {
      auto it = model_index.find(name);
      return it == model_index.end() ? nullptr : &models[it->second];
    }
  };
  using EvidenceKey = std::pair<std::string, std::string>;  // (stack, arch)
  std::shared_ptr<const Snapshot> Load() ABSL_LOCKS_EXCLUDED(mu_);
  void LoadEvidenceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds a row to evidence_ and to its key's tally, unless its id is known.
  void AddEvidenceLocked(dcufleet::v1::Evidence e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One store transaction for what these nodes have (ObserveNodes).
  void RecordObservations(const std::vector<CatalogStore::NodeObservation>& observations, int64_t now_ms)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The first of the model's directories on `node` that is usable (shards
  // complete, weights not damaged); `damaged`, when given, gets the first
  // that matched the model but was not.
  const dcufleet::v1::ModelDirectory* FindModelDir(
      const std::string& model, const dcufleet::v1::NodeView& node, const Snapshot& snap,
      const dcufleet::v1::ModelDirectory** damaged = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  ModelPreparation Prepare(const std::string& model, const dcufleet::v1::NodeView& node,
                           const std::string& model_path, const dcufleet::v1::Plan& plan,
                           const Snapshot& snap);

  CatalogStore* const store_;
  const common::Clock* const clock_;
  absl::Duration requalify_after_ = absl::Hours(6);
  absl::Mutex mu_;
  std::shared_ptr<const Snapshot> cache_ ABSL_GUARDED_BY(mu_);
  absl::Time loaded_at_ ABSL_GUARDED_BY(mu_);
  // Evidence by (stack, arch), appended to as launches are recorded (not
  // reloaded per outcome: a fleet records one per launch). Every 10 s, in
  // case something else wrote rows, only the rows recorded after the
  // store's sequence number last read (evidence_seq_) are read, known ids
  // skipped; in full at first, after Invalidate and every
  // kEvidenceFullReadEvery, which also drops a row the store refused and
  // finds one PostgreSQL committed out of sequence order. Reading every row
  // every 10 s held mu_ for longer the longer the fleet ran.
  static constexpr absl::Duration kEvidenceFullReadEvery = absl::Minutes(10);
  bool evidence_valid_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time evidence_loaded_at_ ABSL_GUARDED_BY(mu_);
  absl::Time evidence_full_at_ ABSL_GUARDED_BY(mu_);
  int64_t evidence_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<EvidenceKey, std::vector<dcufleet::v1::Evidence>> evidence_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<std::string> evidence_ids_ ABSL_GUARDED_BY(mu_);
  // Recorded (in evidence_ already), not yet written: FlushOutcomes.
  std::vector<dcufleet::v1::Evidence> pending_evidence_ ABSL_GUARDED_BY(mu_);
  // Verdicts per (stack, arch), then model: (model verdict, stack-arch
  // verdict), rendered from tallies_ and dropped when a row is added.
  std::map<EvidenceKey, std::map<std::string, std::pair<dcufleet::v1::Verdict, dcufleet::v1::Verdict>>>
      verdicts_ ABSL_GUARDED_BY(mu_);
  // Per (stack, arch): its evidence folded into verdicts and the learned fix
  // in force, a row added as each launch is recorded (issue 22: recomputing
  // them over the key's rows, which grow by one per launch, took a growing
  // share of every pass, and reading the fix sorted them for every launch
  // rendered). Built from evidence_ when first asked for after a reload.
  struct KeyTally {
    KeyTally(const std::string& stack, const std::string& arch) : verdicts(stack, arch) {}
    modelkit::VerdictTally verdicts;
    modelkit::LearnedFixTally fix;
  };
  KeyTally& TallyLocked(const EvidenceKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::map<EvidenceKey, KeyTally> tallies_ ABSL_GUARDED_BY(mu_);
  // "model\0directory name" -> whether the directory holds the model.
  std::map<std::string, bool> dir_matches_ ABSL_GUARDED_BY(mu_);
  // Config audits and remediations by everything they depend on: a fleet
  // reports the same config.json from thousands of nodes.
  struct CachedPreparation {
    std::string config_json;
    std::vector<std::string> entries;
    ModelPreparation preparation;
  };
  std::map<std::string, CachedPreparation> preparations_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, dcufleet::v1::AuditReport> audits_ ABSL_GUARDED_BY(mu_);
  // Node -> fingerprint of the models and environments last recorded.
  std::map<std::string, std::string> observed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::controller
