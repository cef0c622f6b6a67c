// The launch-log classifier with the shipped rules, on arbitrary logs; and
// the rules parser itself on arbitrary text.
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "modelkit/diagnosis/log_normalizer.h"

#ifndef DCU_SOURCE_DIR_DEFAULT
#define DCU_SOURCE_DIR_DEFAULT "."
#endif

namespace {
const dcu::modelkit::LogClassifier* Classifier() {
  static const dcu::modelkit::LogClassifier* c = [] {
    const char* src = std::getenv("DCU_SOURCE_DIR");
    std::string path = std::string(src && *src ? src : DCU_SOURCE_DIR_DEFAULT) +
                       "/deploy/diagnosis/rules.txtpb";
    auto rules = dcu::modelkit::LoadDiagnosisRulesFile(path, dcu::modelkit::AllDiagnosisActions());
    if (!rules.ok()) std::abort();  // a broken rules file is not the input's fault
    auto made = dcu::modelkit::LogClassifier::Create(*rules, path);
    if (!made.ok()) std::abort();
    return new dcu::modelkit::LogClassifier(std::move(*made));
  }();
  return c;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  dcu::modelkit::ClassifyOptions options;
  options.facts["model.name"] = "qwen3-32b";
  options.facts_complete = size % 2 == 0;
  auto result = Classifier()->ClassifyText(text, options);
  (void)result.ByteSizeLong();
  for (const auto& line : dcu::modelkit::SplitLogLines(text, 64)) {
    (void)dcu::modelkit::NormalizeLogLine(line);
    (void)dcu::modelkit::IsExceptionLine(line);
  }
  auto rules = dcu::modelkit::ParseDiagnosisRules(text, "fuzz.txtpb", dcu::modelkit::AllDiagnosisActions());
  if (rules.ok() && rules->rule_size() < 50) {
    auto c = dcu::modelkit::LogClassifier::Create(*rules, "fuzz");
    if (c.ok()) (void)c->ClassifyText("HIP error: invalid device function\n", options);
  }
  return 0;
}
