// Trains the learned fallback of the launch-failure classifier offline:
//   build/bin/train_fallback [--source-dir DIR] [--out FILE]
// reads tests/data/launch-logs and tests/data/diagnosis-corpus/dev (never
// the held-out splits), chooses smoothing and threshold by
// leave-one-thread-out cross-validation, prints the figures on stderr and
// writes the model (default: DIR/deploy/diagnosis/fallback_model.tsv).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/embedded_rules.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "modelkit/diagnosis/fallback_training.h"

int main(int argc, char** argv) {
  std::string source_dir = ".";
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--source-dir" && i + 1 < argc) {
      source_dir = argv[++i];
    } else if (a == "--features" && i + 1 < argc) {
      // Prints what the fallback reads of one log (for people tuning it).
      auto rules = dcu::modelkit::LoadDiagnosisRulesFile(
          source_dir + "/" + std::string(dcu::modelkit::kDefaultDiagnosisRulesPath),
          dcu::modelkit::AllDiagnosisActions());
      if (!rules.ok()) return 1;
      auto classifier = dcu::modelkit::LogClassifier::Create(*rules);
      if (!classifier.ok()) return 1;
      std::ifstream in(argv[++i], std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      bool sees = false;
      auto features =
          classifier->FallbackFeaturesOf(dcu::modelkit::SplitLogLines(text.str()), &sees);
      std::cout << "sees an error: " << (sees ? "yes" : "no") << "\n";
      for (const auto& f : features) std::cout << f << "\n";
      return 0;
    } else if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else {
      std::cerr << "usage: train_fallback [--source-dir DIR] [--out FILE|-] | [--features LOG]\n";
      return 2;
    }
  }
  if (out.empty()) out = source_dir + "/" + std::string(dcu::modelkit::kDefaultFallbackModelPath);
  auto trained = dcu::modelkit::TrainFallbackFromCorpus(source_dir);
  if (!trained.ok()) {
    std::cerr << "error: " << trained.status() << "\n";
    return 1;
  }
  std::cerr << trained->report;
  if (out == "-") {
    std::cout << trained->model_text;
    return 0;
  }
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file << trained->model_text;
  if (!file.good()) {
    std::cerr << "error: cannot write " << out << "\n";
    return 1;
  }
  std::cerr << "wrote " << out << "\n";
  return 0;
}
