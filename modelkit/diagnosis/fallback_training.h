#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dcu::modelkit {

// Trains the learned fallback (fallback_model.h) offline, from the labelled
// first corpus (tests/data/launch-logs), the dev split of the generalisation
// corpus (tests/data/diagnosis-corpus/dev) and the held-out splits already
// read and scored (kSpentHeldOutSplits in the .cc) ONLY — never from a
// held-out split still to be read, which this code does not open.
//
// The smoothing and the abstention threshold are chosen by
// leave-one-thread-out cross-validation (a thread = a source URL without its
// #fragment; every log of a thread is left out together): for each
// candidate, the rules and the fallback together classify every log of a
// thread with a model trained on the other threads, and the candidate with
// the most right answers less one per wrong guess wins (kWrongGuessCost;
// the best mean over a window of thresholds). The model written is trained on every log with the chosen
// parameters. Deterministic: the same corpus and rules give the same bytes.
struct FallbackTrainingResult {
  std::string model_text;  // deploy/diagnosis/fallback_model.tsv
  std::string report;      // the cross-validation figures, for people
};

// The held-out split directories (under tests/data/diagnosis-corpus) that
// have been read and are trained on. The corpus test checks that they are
// exactly its splits with a recorded first reading, so the two lists cannot
// drift apart by hand.
std::vector<std::string> SpentHeldOutSplits();

// `source_dir`: the checkout root (rules from deploy/diagnosis/rules.txtpb).
absl::StatusOr<FallbackTrainingResult> TrainFallbackFromCorpus(const std::string& source_dir);

}  // namespace dcu::modelkit
