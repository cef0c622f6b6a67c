#pragma once

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "controller/core/knowledge.h"
#include "modelkit/diagnosis/diagnosis_rules.h"

namespace dcu::testing {

// Hand-written fakes of the deploy path's knowledge, one per interface, and
// FakeKnowledge made of them for the reconciler tests. Every answer is one
// the test states (stacks with a verdict, a fixed memory rule, a stated
// config preparation); broken verdicts follow recorded stack_arch failures,
// as the real matrix does.

class FakeModelCatalog : public virtual controller::ModelCatalog {
 public:
  struct FakeStack {
    std::string id;
    std::string kind;  // bare | container
    std::string arch;
    std::string verdict;  // works | untested | broken
    int rank = 0;
  };
  std::vector<FakeStack> stacks;
  controller::ModelFacts facts{"qwen3-32b", 65536LL << 20, 64, 8, {1, 2, 4, 8}};
  std::string model_path = "/models/Qwen3-32B";
  std::set<std::string> nodes_without_model;
  std::set<std::string> nodes_without_runtime;

  absl::StatusOr<controller::ModelFacts> Model(const std::string& model) override {
    if (model != facts.name) return absl::NotFoundError(absl::StrCat("model '", model, "' not in the catalog"));
    return facts;
  }
  void PlansForArch(const std::string& model, const std::string& arch,
                    std::vector<dcufleet::v1::Plan>* plans,
                    std::vector<dcufleet::v1::Plan>* excluded) override {
    for (const auto& s : stacks) {
      if (s.arch != arch) continue;
      dcufleet::v1::Plan p;
      p.set_stack_id(s.id);
      p.set_runtime_kind(common::ParseRuntimeKind(s.kind).value_or(dcufleet::v1::RUNTIME_KIND_UNSPECIFIED));
      p.set_arch(arch);
      p.set_rank(s.rank);
      std::string verdict = s.verdict;
      for (const auto& o : RecordedOutcomes()) {
        if (o.stack_id == s.id && o.arch == arch && !o.ready && o.scope == "stack_arch") verdict = "broken";
      }
      p.set_verdict(common::ParseVerdictState(verdict).value_or(dcufleet::v1::VERDICT_STATE_UNSPECIFIED));
      if (verdict == "broken") {
        p.set_excluded_reason("broken");
        excluded->push_back(p);
      } else {
        plans->push_back(p);
      }
    }
  }
  std::string RuntimeOnNode(const dcufleet::v1::Plan& p, const dcufleet::v1::NodeView& n) override {
    if (nodes_without_runtime.count(n.name())) return "";
    return absl::StrCat("/opt/conda/envs/", p.stack_id());
  }
  std::string ModelPathOnNode(const std::string&, const dcufleet::v1::NodeView& n) override {
    return nodes_without_model.count(n.name()) ? "" : model_path;
  }

 protected:
  // The outcomes verdicts follow (FakeKnowledge's recorded ones).
  virtual const std::vector<controller::LaunchOutcomeRecord>& RecordedOutcomes() const {
    static const std::vector<controller::LaunchOutcomeRecord> kNone;
    return kNone;
  }
};

class FakeModelPreparer : public virtual controller::ModelPreparer {
 public:
  // What the config audit answers (the test states it); its model_path
  // defaults to the scheduler's.
  controller::ModelPreparation preparation;

  controller::ModelPreparation PrepareModel(const std::string&, const dcufleet::v1::NodeView&,
                                            const std::string& path, const dcufleet::v1::Plan&,
                                            int) override {
    controller::ModelPreparation p = preparation;
    if (p.model_path.empty()) p.model_path = path;
    return p;
  }
};

class FakeLaunchRenderer : public virtual controller::LaunchRenderer {
 public:
  // Per-device bytes needed at a TP: weights / tp + overhead.
  int64_t overhead = 8LL << 30;
  // The stack's own library order and env, as a recipe would give them.
  std::vector<std::string> recipe_ld_library_path;
  std::map<std::string, std::string> recipe_env;
  // Device totals RenderLaunch was given, in call order.
  std::vector<int64_t> rendered_device_totals;

  controller::MemoryCheck CheckMemory(const dcufleet::v1::DeploymentSpec& spec, int tp,
                                      int64_t total) override {
    controller::MemoryCheck m;
    int64_t need = WeightBytes() / tp + overhead;
    int64_t budget = static_cast<int64_t>(spec.gpu_memory_utilization() * total);
    m.required_free_bytes = budget;
    m.fits = need <= budget;
    m.plan.set_tp(tp);
    m.plan.set_weights_per_device_bytes(WeightBytes() / tp);
    m.plan.set_overhead_bytes(overhead);
    m.plan.set_budget_bytes(budget);
    m.plan.set_fits(m.fits);
    if (!m.fits) m.reason = "weights do not fit";
    return m;
  }
  absl::StatusOr<dcufleet::v1::InstanceSpec> RenderLaunch(
      const dcufleet::v1::DeploymentSpec& spec, const dcufleet::v1::Plan& plan,
      const dcufleet::v1::Placement& placement, const std::string& model_path,
      int64_t device_total) override {
    rendered_device_totals.push_back(device_total);
    dcufleet::v1::InstanceSpec s;
    s.set_stack_id(plan.stack_id());
    s.set_runtime_kind(plan.runtime_kind());
    s.set_model_path(model_path);
    s.add_argv("python");
    s.add_argv(model_path);
    s.add_argv("--tensor-parallel-size");
    s.add_argv(absl::StrCat(placement.tp()));
    if (spec.max_model_len() > 0) {
      s.add_argv("--max-model-len");
      s.add_argv(absl::StrCat(spec.max_model_len()));
    }
    for (const auto& p : recipe_ld_library_path) s.add_ld_library_path_prefix(p);
    for (const auto& [k, v] : recipe_env) (*s.mutable_env())[k] = v;
    return s;
  }
  int64_t KvCacheBytes(const dcufleet::v1::DeploymentSpec&, int, int64_t) override {
    return 1LL << 30;
  }

 protected:
  // The model's weights (FakeKnowledge: its catalog's facts).
  virtual int64_t WeightBytes() const { return 65536LL << 20; }
};

class FakeKnowledge : public controller::Knowledge,
                      public FakeModelCatalog,
                      public FakeModelPreparer,
                      public FakeLaunchRenderer {
 public:
  std::vector<controller::LaunchOutcomeRecord> outcomes;

  void RecordOutcome(const controller::LaunchOutcomeRecord& o) override { outcomes.push_back(o); }
  std::map<std::string, std::string> DiagnosisFacts(const dcufleet::v1::DeploymentSpec&,
                                                    const dcufleet::v1::Attempt& a,
                                                    int64_t) override {
    return {{"stack.id", a.stack_id()}};
  }

 protected:
  const std::vector<controller::LaunchOutcomeRecord>& RecordedOutcomes() const override {
    return outcomes;
  }
  int64_t WeightBytes() const override { return facts.weight_bytes; }
};
// Maps substrings of a log to findings; the test states the mapping.
class FakeDiagnoser : public controller::Diagnoser {
 public:
  struct Rule {
    std::string needle;
    dcufleet::v1::AttemptFinding finding;
  };
  std::vector<Rule> rules;
  void Add(const std::string& needle, const std::string& cls, const std::string& kind,
           const std::string& action, std::map<std::string, std::string> params = {}) {
    Rule r;
    r.needle = needle;
    r.finding.set_failure_class(cls);
    r.finding.set_confidence(0.9);
    // The tests name kinds and actions as rules do; an unknown name is a
    // mistake in the test.
    if (kind == "auto") r.finding.set_remediation_kind(dcufleet::v1::REMEDIATION_KIND_AUTO);
    if (kind == "failover") r.finding.set_remediation_kind(dcufleet::v1::REMEDIATION_KIND_FAILOVER);
    if (kind == "human") r.finding.set_remediation_kind(dcufleet::v1::REMEDIATION_KIND_HUMAN);
    auto typed = modelkit::DiagnosisActionFromName(action);
    if (!typed || r.finding.remediation_kind() == dcufleet::v1::REMEDIATION_KIND_UNSPECIFIED) {
      std::abort();
    }
    r.finding.set_remediation_action(*typed);
    for (auto& [k, v] : params) (*r.finding.mutable_params())[k] = v;
    rules.push_back(r);
  }
  std::vector<dcufleet::v1::AttemptFinding> Diagnose(
      const std::vector<std::string>& tail, const std::map<std::string, std::string>&) override {
    std::vector<dcufleet::v1::AttemptFinding> out;
    for (const auto& r : rules) {
      for (const auto& line : tail) {
        if (line.find(r.needle) != std::string::npos) {
          auto f = r.finding;
          f.add_evidence(line);
          out.push_back(f);
          break;
        }
      }
    }
    return out;
  }
};

}  // namespace dcu::testing
