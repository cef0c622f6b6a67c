#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "controller/core/knowledge.h"

namespace dcu::testing {

// A hand-written Knowledge for reconciler tests: stacks per arch with a
// verdict the test sets, a fixed memory rule, and recorded outcomes. Broken
// verdicts follow recorded stack_arch failures, as the real matrix does.
class FakeKnowledge : public controller::Knowledge {
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
  // Per-device bytes needed at a TP: weights / tp + 8 GiB.
  int64_t overhead = 8LL << 30;
  std::vector<controller::LaunchOutcomeRecord> outcomes;
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
      for (const auto& o : outcomes) {
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
  controller::MemoryCheck CheckMemory(const dcufleet::v1::DeploymentSpec& spec, int tp,
                                      int64_t total) override {
    controller::MemoryCheck m;
    int64_t need = facts.weight_bytes / tp + overhead;
    int64_t budget = static_cast<int64_t>(spec.gpu_memory_utilization() * total);
    m.required_free_bytes = budget;
    m.fits = need <= budget;
    m.explanation.push_back(absl::StrCat("need ", need, " of budget ", budget));
    if (!m.fits) m.reason = "weights do not fit";
    return m;
  }
  std::string RuntimeOnNode(const dcufleet::v1::Plan& p, const dcufleet::v1::NodeView& n) override {
    if (nodes_without_runtime.count(n.name())) return "";
    return absl::StrCat("/opt/conda/envs/", p.stack_id());
  }
  std::string ModelPathOnNode(const std::string&, const dcufleet::v1::NodeView& n) override {
    return nodes_without_model.count(n.name()) ? "" : model_path;
  }
  controller::ModelPreparation PrepareModel(const std::string&, const dcufleet::v1::NodeView&,
                                            const std::string& path, const dcufleet::v1::Plan&,
                                            int) override {
    controller::ModelPreparation p;
    p.model_path = path;
    return p;
  }
  absl::StatusOr<dcufleet::v1::InstanceSpec> RenderLaunch(
      const dcufleet::v1::DeploymentSpec& spec, const dcufleet::v1::Plan& plan,
      const dcufleet::v1::Placement& placement, const std::string& model_path) override {
    dcufleet::v1::InstanceSpec s;
    s.set_stack_id(plan.stack_id());
    s.set_runtime_kind(plan.runtime_kind());
    s.set_model_path(model_path);
    s.add_argv("python");
    s.add_argv("--tensor-parallel-size");
    s.add_argv(absl::StrCat(placement.tp()));
    return s;
  }
  int64_t KvCacheBytes(const dcufleet::v1::DeploymentSpec&, int, int64_t) override {
    return 1LL << 30;
  }
  void RecordOutcome(const controller::LaunchOutcomeRecord& o) override { outcomes.push_back(o); }
  std::map<std::string, std::string> DiagnosisFacts(const dcufleet::v1::DeploymentSpec&,
                                                    const dcufleet::v1::Attempt& a,
                                                    int64_t) override {
    return {{"stack.id", a.stack_id()}};
  }
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
    r.finding.set_remediation_kind(kind);
    r.finding.set_remediation_action(action);
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
