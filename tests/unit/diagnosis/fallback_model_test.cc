// The learned fallback of the classifier (modelkit/diagnosis/fallback_model.h):
// the checked-in model is what train_fallback produces from the corpora, and
// its findings say that they are a statistical guess and change nothing.

#include "modelkit/diagnosis/fallback_model.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/embedded_rules.h"
#include "modelkit/diagnosis/fallback_training.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "tests/testing/test_env.h"

namespace dcu::modelkit {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The checkout and its files, as every test reads them (tests/testing/test_env.h).
using testing::SourceDir;
std::string ReadFile(const std::string& path) { return testing::ReadFileOrEmpty(path); }

TEST(FallbackModelTest, CheckedInModelIsWhatTrainFallbackProduces) {
  auto trained = TrainFallbackFromCorpus(SourceDir());
  ASSERT_TRUE(trained.ok()) << trained.status();
  std::cout << trained->report;
  const std::string checked_in =
      ReadFile(SourceDir() + "/" + std::string(kDefaultFallbackModelPath));
  // If this fails, the corpora, the rules or the features changed: run
  // `build/bin/train_fallback --source-dir .` and review the diff.
  EXPECT_TRUE(trained->model_text == checked_in)
      << "deploy/diagnosis/fallback_model.tsv is not what train_fallback produces";
}

TEST(FallbackModelTest, EmbeddedModelIsTheCheckedInFile) {
  EXPECT_EQ(std::string(EmbeddedFallbackModelText()),
            ReadFile(SourceDir() + "/" + std::string(kDefaultFallbackModelPath)));
  auto model = FallbackModel::Parse(EmbeddedFallbackModelText(), kEmbeddedFallbackModelName);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_GT(model->class_count(), 10);
  EXPECT_GT(model->threshold(), 0.0);
  // 1.0 is a valid choice: the cross-validation found no threshold at which
  // the guesses are right more often than wrong (fallback_training.cc,
  // kWrongGuessCost), so the model only abstains, naming its best guess.
  EXPECT_LE(model->threshold(), 1.0);
}

std::vector<const FallbackExample*> TinyExamples() {
  static const FallbackExample a{{"t:frobnicationerror", "m:quux", "m:refused"}, "port_in_use"};
  static const FallbackExample b{{"t:frobnicationerror", "m:quux", "m:refused", "m:bar"},
                                 "port_in_use"};
  static const FallbackExample c{{"t:valueerror", "m:zorp", "m:exhausted"}, "cuda_oom_model_load"};
  static const FallbackExample d{{"t:valueerror", "m:zorp", "m:exhausted", "m:bar"},
                                 "cuda_oom_model_load"};
  return {&a, &b, &c, &d};
}

FallbackModel TinyModel(double threshold) {
  return FallbackModel::Train(TinyExamples(), 0.1, 1, threshold);
}

// Cross-validation counts each fold once and re-smooths it per alpha
// (fallback_training.cc): that must be the model Train builds with the alpha.
TEST(FallbackModelTest, ResmoothIsWhatTrainBuildsWithThatAlpha) {
  FallbackModel resmoothed = TinyModel(0.4);  // alpha 0.1
  const FallbackModel at_first_alpha = TinyModel(0.4);
  resmoothed.Resmooth(1.0);
  const FallbackModel direct = FallbackModel::Train(TinyExamples(), 1.0, 1, 0.4);
  EXPECT_EQ(resmoothed.Serialize(), direct.Serialize());
  const std::vector<std::string> probe = {"t:frobnicationerror", "m:bar", "m:unseen"};
  const FallbackGuess r = resmoothed.Predict(probe);
  const FallbackGuess t = direct.Predict(probe);
  EXPECT_EQ(r.failure_class, t.failure_class);
  EXPECT_DOUBLE_EQ(r.confidence, t.confidence);
  // Not vacuous: the smoothing moves the confidence.
  EXPECT_NE(at_first_alpha.Predict(probe).confidence, r.confidence);
}

TEST(FallbackModelTest, SerializeParseRoundTrips) {
  FallbackModel m = TinyModel(0.4);
  auto parsed = FallbackModel::Parse(m.Serialize(), "tiny");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Serialize(), m.Serialize());
  EXPECT_FALSE(FallbackModel::Parse("param\tthreshold\t0.5\nfeature\tx\tnope=1\n", "bad").ok());
  EXPECT_FALSE(FallbackModel::Parse("hello\n", "bad").ok());
}

TEST(FallbackModelTest, TokensUsePlaceholders) {
  EXPECT_THAT(FallbackTokens("Can't open '/opt/x/libfoo.so.1' at 0x7f3a: error 12 on gfx928"),
              ::testing::ElementsAre("can", "open", "<q>", "<hex>", "error", "#", "gfx#"));
  EXPECT_THAT(FallbackTokens("cannot load /usr/lib/x/libcudart.so.12: no such file"),
              ::testing::ElementsAre("cannot", "load", "<path>", "no", "such"));
}

// Rules that know only one wording, so that the fallback is consulted.
LogClassifier ClassifierWith(std::shared_ptr<const FallbackModel> model) {
  auto rules = ParseDiagnosisRules(R"pb(
    rule { id: "port" failure_class: "port_in_use" any: "Address already in use"
           confidence: 0.9
           remediation { kind: REMEDIATION_KIND_AUTO action: "change_port"
                         summary: "pick another port" } }
    rule { id: "oom" failure_class: "cuda_oom_model_load" any: "CUDA out of memory"
           confidence: 0.9
           remediation { kind: REMEDIATION_KIND_AUTO action: "set_env" params { key: "name" value: "X" }
                         params { key: "value" value: "1" } summary: "set X" } }
    rule { id: "unknown" failure_class: "unknown" confidence: 0.1
           remediation { kind: REMEDIATION_KIND_HUMAN action: "human" summary: "read it" } }
  )pb", "inline", AllDiagnosisActions());
  EXPECT_TRUE(rules.ok()) << rules.status();
  auto c = LogClassifier::Create(*rules, "inline");
  EXPECT_TRUE(c.ok()) << c.status();
  c->SetFallback(std::move(model), "tiny");
  return std::move(*c);
}

constexpr char kUnrecognisedLog[] =
    "INFO starting\n"
    "Traceback (most recent call last):\n"
    "  File \"/opt/venv/lib/python3.12/site-packages/frob/core.py\", line 7, in run\n"
    "    frobnicate()\n"
    "frob.FrobnicationError: the quux refused\n";

TEST(FallbackModelTest, FindingSaysItIsAGuessAndOnlyAsksAPerson) {
  LogClassifier c = ClassifierWith(std::make_shared<const FallbackModel>(TinyModel(0.3)));
  auto result = c.ClassifyText(kUnrecognisedLog);
  ASSERT_EQ(result.findings_size(), 1);
  const auto& f = result.findings(0);
  EXPECT_EQ(f.failure_class(), "port_in_use");
  EXPECT_EQ(f.basis(), dcufleet::v1::FINDING_BASIS_LEARNED_FALLBACK);
  EXPECT_THAT(f.rule_id(), StartsWith("learned_fallback:"));
  EXPECT_LE(f.confidence(), kFallbackConfidenceScale);
  EXPECT_GT(f.confidence(), 0.0);
  EXPECT_THAT(f.explanation(), HasSubstr("statistical guess"));
  EXPECT_THAT(f.explanation(), HasSubstr("m:quux"));
  // No automatic action on a guess: the rule's change_port is advice only.
  EXPECT_EQ(f.remediation().kind(), dcufleet::v1::REMEDIATION_KIND_HUMAN);
  EXPECT_EQ(f.remediation().action(), "human");
  EXPECT_THAT(f.remediation().summary(), HasSubstr("pick another port"));
  EXPECT_EQ(f.alternatives_size(), 0);
  ASSERT_GT(f.evidence_size(), 0);
  EXPECT_THAT(f.evidence(0).text(), HasSubstr("FrobnicationError"));

  // Off per call, and a rule match always wins.
  ClassifyOptions off;
  off.use_fallback = false;
  EXPECT_EQ(c.ClassifyText(kUnrecognisedLog, off).findings(0).failure_class(), "unknown");
  auto ruled = c.ClassifyText(std::string(kUnrecognisedLog) + "CUDA out of memory\n");
  EXPECT_EQ(ruled.findings(0).failure_class(), "cuda_oom_model_load");
  EXPECT_NE(ruled.findings(0).basis(), dcufleet::v1::FINDING_BASIS_LEARNED_FALLBACK);
}

TEST(FallbackModelTest, AbstainsBelowItsThreshold) {
  LogClassifier c = ClassifierWith(std::make_shared<const FallbackModel>(TinyModel(1.0)));
  auto result = c.ClassifyText(kUnrecognisedLog);
  EXPECT_EQ(result.findings(0).failure_class(), "unknown");
  EXPECT_THAT(result.findings(0).explanation(), HasSubstr("abstained"));
}

TEST(FallbackModelTest, NeverFiresOnALogWithoutAnError) {
  // Threshold 0: it would answer anything; but a log without a raised error
  // or traceback (a server that started) is never given a guess.
  LogClassifier c = ClassifierWith(std::make_shared<const FallbackModel>(TinyModel(0.0)));
  auto result = c.ClassifyText(
      "INFO the quux refused a frobnication, retrying\nWARNING zorp exhausted\n"
      "INFO Uvicorn running on http://0.0.0.0:8000\n");
  EXPECT_EQ(result.findings(0).failure_class(), "unknown");
  EXPECT_NE(result.findings(0).basis(), dcufleet::v1::FINDING_BASIS_LEARNED_FALLBACK);
}

}  // namespace
}  // namespace dcu::modelkit
