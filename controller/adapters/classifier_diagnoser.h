#pragma once

#include "controller/core/knowledge.h"
#include "modelkit/diagnosis/log_classifier.h"

namespace dcu::controller {

// The deploy reconciler's Diagnoser over the rules-driven LogClassifier.
class ClassifierDiagnoser : public Diagnoser {
 public:
  explicit ClassifierDiagnoser(modelkit::LogClassifier classifier) : classifier_(std::move(classifier)) {}
  std::vector<dcufleet::v1::AttemptFinding> Diagnose(
      const std::vector<std::string>& log_tail,
      const std::map<std::string, std::string>& facts) override;

 private:
  modelkit::LogClassifier classifier_;
};

}  // namespace dcu::controller
