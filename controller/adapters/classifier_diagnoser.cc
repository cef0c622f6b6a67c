#include "controller/adapters/classifier_diagnoser.h"

#include "modelkit/diagnosis/diagnosis_rules.h"

namespace dcu::controller {

using modelkit::ClassifyOptions;
using modelkit::DiagnosisActionFromName;

std::vector<dcufleet::v1::AttemptFinding> ClassifierDiagnoser::Diagnose(
    const std::vector<std::string>& log_tail, const std::map<std::string, std::string>& facts) {
  ClassifyOptions opts;
  opts.facts = facts;
  opts.facts_complete = true;
  dcufleet::v1::DiagnosisResult r = classifier_.Classify(log_tail, opts);
  std::vector<dcufleet::v1::AttemptFinding> out;
  for (const auto& f : r.findings()) {
    dcufleet::v1::AttemptFinding a;
    a.set_failure_class(f.failure_class());
    a.set_confidence(f.confidence());
    for (const std::string& c : f.conditions()) a.add_conditions(c);
    if (f.basis() == dcufleet::v1::FINDING_BASIS_EXPECTED_NEXT) {
      // A hidden cause is not in the log yet (it bites once the first cause
      // is fixed): for people reading `describe`, with why and what it rests
      // on, and no remediation (the policy never acts on it).
      a.set_expected_next(true);
      a.set_explanation(f.explanation());
      out.push_back(std::move(a));
      continue;
    }
    for (const auto& e : f.evidence()) a.add_evidence(e.text());
    a.set_remediation_kind(f.remediation().kind());
    // The loader admitted only names of the vocabulary.
    a.set_remediation_action(
        DiagnosisActionFromName(f.remediation().action())
            .value_or(dcufleet::v1::DIAGNOSIS_ACTION_UNSPECIFIED));
    a.set_remediation_detail(f.remediation().summary());
    for (const auto& [k, v] : f.remediation().params()) (*a.mutable_params())[k] = v;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace dcu::controller
