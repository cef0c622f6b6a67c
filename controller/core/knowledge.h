#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/core/scheduler.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::controller {

// What the config audit of the model directory on the chosen node found, and
// how the launch must change so the engine sees a correct config without the
// user's files being touched.
struct ModelPreparation {
  std::vector<dcufleet::v1::Finding> findings;
  // "" (nothing to do), "overlay_dir", "hf_overrides".
  std::string remediation;
  std::string remediation_detail;
  // Overlay: the agent builds it (links to weights + this config.json).
  std::string overlay_dir;
  std::string overlay_config_json;
  // The model path the engine must be given (the overlay when one is used).
  std::string model_path;
  std::vector<std::string> extra_args;
  // An error-severity problem no remediation fixes (shards missing, …).
  std::string blocking_reason;
};

// One launch outcome, as the stack matrix records it.
struct LaunchOutcomeRecord {
  std::string stack_id;
  std::string node;
  std::string arch;
  std::string product_name;
  std::string model;
  int tp = 0;
  bool ready = false;
  std::string failure_class;
  // "stack_arch" when the failure is deterministic for the stack on the arch.
  std::string scope;
  std::string message;
  std::string instance_id;
  std::string remediation;
  int64_t duration_ms = 0;
  bool config_ok = true;
  // Ready: what made it Ready that a later launch of the stack on the arch
  // should start with (the fix it carried, and what this deployment learned).
  dcufleet::v1::LearnedFix learned_fix;
  // The learned fix (its evidence id) the launch carried: a failure that
  // implicates the stack demotes it.
  std::string carried_fix;
};

// What the deploy path needs to know, split by who asks. Each is implemented
// over the catalog store by CatalogKnowledge (controller/adapters); unit
// tests give each its own fake.

// Catalog and verdicts: the scheduler's questions.
class ModelCatalog {
 public:
  virtual ~ModelCatalog() = default;
  // NOT_FOUND (naming the model and how to list known ones) when unknown.
  virtual absl::StatusOr<ModelFacts> Model(const std::string& model) = 0;
  // Ordered plans for the model on `arch`; stacks broken there go to
  // `excluded` with the verdict's reason.
  virtual void PlansForArch(const std::string& model, const std::string& arch,
                            std::vector<dcufleet::v1::Plan>* plans,
                            std::vector<dcufleet::v1::Plan>* excluded) = 0;
  // Where `plan`'s env or image is on `node` ("" when absent).
  virtual std::string RuntimeOnNode(const dcufleet::v1::Plan& plan,
                                    const dcufleet::v1::NodeView& node) = 0;
  // The directory holding the model on `node`, "" when absent.
  virtual std::string ModelPathOnNode(const std::string& model,
                                      const dcufleet::v1::NodeView& node) = 0;
  // When `node` has the model only in directories that failed verification
  // (missing shards, damaged weights: ModelDirectory.weights), why, naming
  // the directory and its first problem; "" otherwise. Asked only to explain
  // a node that ModelPathOnNode found nothing usable on.
  virtual std::string ModelDamageOnNode(const std::string& model,
                                        const dcufleet::v1::NodeView& node) {
    return "";
  }
  // Sees every node once per reconcile pass (records discovered model
  // directories and environments; cheap when nothing changed).
  // (Pointers: the reconciler's views are shared, not copied.)
  virtual void ObserveNodes(const std::vector<const dcufleet::v1::NodeView*>& nodes) {}
};

// Model preparation: the config audit of the chosen node's model directory.
class ModelPreparer {
 public:
  virtual ~ModelPreparer() = default;
  // Audits the model directory reported by `node` for `plan`'s stack.
  virtual ModelPreparation PrepareModel(const std::string& model,
                                        const dcufleet::v1::NodeView& node,
                                        const std::string& model_path,
                                        const dcufleet::v1::Plan& plan, int tp) = 0;
};

// Launch rendering and the memory plan behind it.
class LaunchRenderer {
 public:
  virtual ~LaunchRenderer() = default;
  virtual MemoryCheck CheckMemory(const dcufleet::v1::DeploymentSpec& spec, int tp,
                                  int64_t device_total) = 0;
  // argv/env/runtime of a launch of `plan` from the stack's template, env
  // recipe and arch recipe; `device_total` (bytes of one placed device) sizes
  // the memory plan. Everything else (placement, config fix, learned
  // remediations, per-attempt fields) is LaunchPlanner's.
  virtual absl::StatusOr<dcufleet::v1::InstanceSpec> RenderLaunch(
      const dcufleet::v1::DeploymentSpec& spec, const dcufleet::v1::Plan& plan,
      const dcufleet::v1::Placement& placement, const std::string& model_path,
      int64_t device_total) = 0;
  // KV cache bytes to give --kv-cache-memory-bytes for this placement.
  virtual int64_t KvCacheBytes(const dcufleet::v1::DeploymentSpec& spec, int tp,
                               int64_t device_total) = 0;
};

// Evidence sink: launch outcomes feed the stack matrix (and so verdicts).
class OutcomeSink {
 public:
  virtual ~OutcomeSink() = default;
  virtual void RecordOutcome(const LaunchOutcomeRecord& outcome) = 0;
  // Makes the outcomes recorded since the last call durable. RecordOutcome
  // changes verdicts at once; the reconciler calls this once per pass,
  // after it persisted the deployments, so a pass's launches are one
  // transaction, not one each (on PostgreSQL one commit per Ready launch
  // was most of a placement pass: bench/ha/stores.sh).
  virtual void FlushOutcomes() {}
};

// Facts the diagnosis may rely on for an attempt.
class DiagnosisFactSource {
 public:
  virtual ~DiagnosisFactSource() = default;
  // "stack.accepts_…", "memory_plan.kv_cache_bytes",
  // "memory_plan.mem_fraction_static", "model.config_audit_clean", …
  virtual std::map<std::string, std::string> DiagnosisFacts(
      const dcufleet::v1::DeploymentSpec& spec, const dcufleet::v1::Attempt& attempt,
      int64_t device_total) = 0;
};

// All of the above, as main.cc wires one object for them. Components take
// only the parts they use (LaunchPlanner: preparer + renderer;
// RemediationPolicy: catalog + preparer + renderer).
// (Virtual bases, so that a test can assemble its Knowledge from the fakes
// of the parts.)
class Knowledge : public virtual ModelCatalog,
                  public virtual ModelPreparer,
                  public virtual LaunchRenderer,
                  public virtual OutcomeSink,
                  public virtual DiagnosisFactSource {};

// Turns a failed launch's log tail into ordered findings (most likely first).
class Diagnoser {
 public:
  virtual ~Diagnoser() = default;
  // `facts` are complete: an absent fact counts as false.
  virtual std::vector<dcufleet::v1::AttemptFinding> Diagnose(
      const std::vector<std::string>& log_tail,
      const std::map<std::string, std::string>& facts) = 0;
};

}  // namespace dcu::controller
