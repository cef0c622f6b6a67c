#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "modelkit/diagnosis/log_normalizer.h"
#include "modelkit/diagnosis/log_structure.h"

namespace dcu::modelkit {

// The learned fallback of the launch-failure classifier (docs/diagnosis.md,
// "Round: a learned fallback"): a multinomial Naive Bayes over normalised
// tokens of the terminal error (type, message with numbers, hex, paths and
// quoted names replaced by placeholders), the other raised errors, the
// frames of the traceback the run died in, and the error-ish lines of the
// log. It is consulted only when no rule recognised anything and the log
// holds a raised error or a traceback, and it answers only when its
// confidence reaches the threshold chosen by leave-one-thread-out
// cross-validation on the training corpora (train_fallback).
//
// The model is counts, not probabilities: deploy/diagnosis/fallback_model.tsv
// holds per class the number of training logs and tokens, and per feature
// its count in each class; integers, sorted, so the file is deterministic and
// reviewable. Probabilities are computed when the model is loaded.

// Whether the log shows an error at all, as the structure reader sees it: a
// raised error (Python exception, C++ terminate, Go panic, native error
// line) or a traceback. A log without one (a server that started) never gets
// a fallback finding.
bool FallbackSeesError(const LogStructure& structure);

// The features of a log (prefixed by where they come from: "t:" the terminal
// error's type, "m:"/"b:" its message words and word pairs, "r:" other raised
// errors, "f:"/"p:" the terminal traceback's functions and path parts, "e:"
// error-ish log lines). Bounded work: at most kFallbackErrorLines error-ish
// lines, read from the end.
inline constexpr int kFallbackErrorLines = 12;
inline constexpr int kFallbackOtherErrors = 4;
std::vector<std::string> FallbackFeatures(const std::vector<NormalizedLine>& lines,
                                          const LogStructure& structure);

// Normalised word tokens of one text: lowercase, "0x…" -> "<hex>", a quoted
// name -> "<q>", a path -> "<path>", digit runs -> "#", stop words and
// one-letter words dropped. Exposed for tests.
std::vector<std::string> FallbackTokens(absl::string_view text);

struct FallbackGuess {
  std::string failure_class;  // empty when the model has no classes
  double confidence = 0.0;    // tempered posterior of failure_class, 0..1
  std::string runner_up;
  // The features that decided (largest log-likelihood ratio of the guess
  // over the runner-up, times their count), best first.
  std::vector<std::string> deciding_terms;
};

// A document of the training corpus.
struct FallbackExample {
  std::vector<std::string> features;
  std::string label;
};

class FallbackModel {
 public:
  // Builds the model (counts) from examples: features seen in fewer than
  // `min_doc_freq` examples are dropped.
  static FallbackModel Train(const std::vector<const FallbackExample*>& examples,
                             double alpha, int min_doc_freq, double threshold);
  // The same counts under another smoothing: exactly what Train with
  // `alpha` would have built (the counts do not depend on it), without
  // counting again (cross-validation tries every alpha on each fold).
  void Resmooth(double alpha) {
    alpha_ = alpha;
    Finish();
  }

  // The model file's text (see above) and back.
  std::string Serialize() const;
  static absl::StatusOr<FallbackModel> Parse(absl::string_view text, absl::string_view source);

  FallbackGuess Predict(const std::vector<std::string>& features, int terms_reported = 4) const;

  double threshold() const { return threshold_; }
  void set_threshold(double t) { threshold_ = t; }
  int class_count() const { return static_cast<int>(classes_.size()); }
  int feature_count() const { return static_cast<int>(features_.size()); }

 private:
  void Finish();  // computes the log-probabilities from the counts

  double alpha_ = 0.5;
  int min_doc_freq_ = 2;
  double threshold_ = 1.0;
  std::vector<std::string> classes_;
  std::vector<int64_t> class_docs_;
  std::vector<int64_t> class_tokens_;
  // feature -> (class index, count), class index ascending.
  std::vector<std::pair<std::string, std::vector<std::pair<int, int64_t>>>> features_;
  // Derived.
  std::unordered_map<std::string, int> feature_index_;
  std::vector<double> log_prior_;
  std::vector<double> log_unseen_;            // per class: log P(feature absent from class)
  std::vector<std::vector<double>> log_seen_;  // per feature, per class
};

}  // namespace dcu::modelkit
