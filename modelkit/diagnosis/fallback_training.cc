#include "modelkit/diagnosis/fallback_training.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/fallback_model.h"
#include "modelkit/diagnosis/log_classifier.h"

namespace dcu::modelkit {

namespace {

constexpr int kMinDocFreq = 2;
const double kAlphas[] = {0.02, 0.05, 0.1, 0.25, 0.5, 1.0};

// What a wrong guess costs, in right answers. The fallback only answers where
// the rules said `unknown`; its answer is shown to a person as a statistical
// guess (remediation `human`). A right guess saves that person a read of the
// log; a wrong one sends them after the wrong cause first, which costs about
// as much as the right one saves. So the threshold maximises
// right - kWrongGuessCost x wrong guesses (1.0: a guess must be right more
// often than wrong to be worth showing), not the right answers alone, which
// count a wrong guess the same as an honest `unknown` (cost 0; its figures
// are reported next to the chosen ones).
constexpr double kWrongGuessCost = 1.0;

// Held-out splits that have been read and scored, and from stop 39 on are
// development material (docs/diagnosis.md, "Round: rules from sources, a
// fifth time"): the fallback trains on them like dev/. A split collected
// later is added here only after its first reading is recorded; until then
// this code does not open it.
constexpr const char* kSpentHeldOutSplits[] = {
    "heldout",          "heldout-fresh",    "heldout-2026-12",  "heldout-2026-12b",
    "heldout-2026-12c", "heldout-2026-12d", "heldout-2026-12e", "heldout-2026-12f",
    "heldout-2026-12g", "heldout-2026-12h", "heldout-2026-12i", "heldout-2026-12j",
    "heldout-2026-12k", "heldout-2026-12l", "heldout-2026-12m", "heldout-2026-12n",
    "heldout-2026-12o", "heldout-2026-12p",
    "heldout-2026-12q", "heldout-2026-12r", "heldout-2026-12s", "heldout-2026-12t",
    "heldout-2026-12u", "heldout-2026-12v", "heldout-2026-12w", "heldout-2026-12x",
    "heldout-2026-12y", "heldout-2026-12z", "heldout-2026-12za", "heldout-2026-12zb",
    "heldout-2026-12zc", "heldout-2026-12zd", "heldout-2026-12ze", "heldout-2026-12zf",
    "heldout-2026-12zg", "heldout-2026-12zh", "heldout-2026-12zi", "heldout-2026-12zj",
    "heldout-2026-12zk", "heldout-2026-12zl", "heldout-2026-12zm", "heldout-2026-12zn",
    "heldout-2026-12zo", "heldout-2026-12zp", "heldout-2026-12zq", "heldout-2026-12zr",
    "heldout-2026-12zs", "heldout-2026-12zt", "heldout-2026-12zu", "heldout-2026-12zv",
    "heldout-2026-12zw", "heldout-2026-12zx", "heldout-2026-12zy", "heldout-2026-12zz",
    "heldout-2026-12zza", "heldout-2026-12zzb", "heldout-2026-12zzc", "heldout-2026-12zzd",
    "heldout-2026-12zze", "heldout-2026-12zzf", "heldout-2026-12zzg", "heldout-2026-12zzh",
    "heldout-2026-12zzi", "heldout-2026-12zzj", "heldout-2026-12zzk", "heldout-2026-12zzl",
    "heldout-2026-12zzm", "heldout-2026-12zzn", "heldout-2026-12zzo", "heldout-2026-12zzp",
    "heldout-2026-12zzq", "heldout-2026-12zzr", "heldout-2026-12zzs"};

struct Doc {
  std::string split;  // "launch-logs" or "dev" (dev/ and the spent held-out splits)
  std::string file;
  std::string label;
  std::string thread;
  std::string rule_top;
  bool rule_from_frames = false;  // the rules' top finding rests on frames only
  bool sees_error = false;
  FallbackExample example;
};

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string ThreadOf(std::string url) {
  size_t hash = url.find('#');
  if (hash != std::string::npos) url.resize(hash);
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

bool Right(const std::string& label, const std::string& predicted) {
  return label == "none" ? predicted == "unknown" : predicted == label;
}

std::string Final(const Doc& d, const FallbackGuess& g, double threshold) {
  if (d.rule_top != "unknown" || !d.sees_error) return d.rule_top;
  if (g.failure_class.empty() || g.failure_class == "unknown" || g.failure_class == "none") {
    return d.rule_top;
  }
  return g.confidence >= threshold ? g.failure_class : d.rule_top;
}

std::string Pct(int a, int b) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%d/%d = %.1f%%", a, b, b ? 100.0 * a / b : 0.0);
  return buf;
}

}  // namespace

std::vector<std::string> SpentHeldOutSplits() {
  return std::vector<std::string>(std::begin(kSpentHeldOutSplits), std::end(kSpentHeldOutSplits));
}

absl::StatusOr<FallbackTrainingResult> TrainFallbackFromCorpus(const std::string& source_dir) {
  auto classifier =
      LoadClassifier(source_dir + "/" + std::string(kDefaultDiagnosisRulesPath), AllDiagnosisActions());
  if (!classifier.ok()) return classifier.status();

  std::vector<Doc> docs;
  std::vector<std::pair<std::string, std::string>> splits = {
      {"launch-logs", source_dir + "/tests/data/launch-logs"},
      {"dev", source_dir + "/tests/data/diagnosis-corpus/dev"}};
  for (const char* spent : kSpentHeldOutSplits) {
    splits.emplace_back("dev", source_dir + "/tests/data/diagnosis-corpus/" + spent);
  }
  for (const auto& [split, dir] : splits) {
    std::string index = ReadWholeFile(dir + "/index.tsv");
    if (index.empty()) return absl::NotFoundError(absl::StrCat(dir, "/index.tsv is missing"));
    bool header = true;
    for (absl::string_view line : absl::StrSplit(index, '\n', absl::SkipEmpty())) {
      if (header) {
        header = false;
        continue;
      }
      std::vector<std::string> f = absl::StrSplit(line, '\t');
      if (f.size() < 4) return absl::InvalidArgumentError(absl::StrCat(dir, ": bad index line"));
      Doc d;
      d.split = split;
      d.file = f[0];
      d.label = f[1];
      d.thread = ThreadOf(f[3]);
      std::string text = ReadWholeFile(dir + "/" + f[0]);
      std::vector<std::string> lines = SplitLogLines(text);
      ClassifyOptions no_fallback;
      no_fallback.use_fallback = false;
      auto result = classifier->Classify(lines, no_fallback);
      d.rule_top = result.findings_size() ? result.findings(0).failure_class() : "unknown";
      d.rule_from_frames = result.findings_size() > 0 &&
                           result.findings(0).basis() == dcufleet::v1::FINDING_BASIS_TRACEBACK_FRAMES;
      d.example.features = classifier->FallbackFeaturesOf(lines, &d.sees_error);
      d.example.label = d.label;
      docs.push_back(std::move(d));
    }
  }

  // Thread -> its logs.
  std::map<std::string, std::vector<int>> threads;
  for (size_t i = 0; i < docs.size(); ++i) threads[docs[i].thread].push_back(static_cast<int>(i));
  auto trainable = [&](int i) { return docs[i].sees_error; };

  std::string report;
  int rules_dev = 0, rules_first = 0, n_dev = 0, n_first = 0;
  for (const Doc& d : docs) {
    bool ok = Right(d.label, d.rule_top);
    (d.split == "dev" ? rules_dev : rules_first) += ok;
    (d.split == "dev" ? n_dev : n_first) += 1;
  }
  absl::StrAppend(&report, "training logs: ", docs.size(), " (", n_first, " launch-logs, ", n_dev,
                  " dev and spent held-out) in ", threads.size(), " threads\n");
  absl::StrAppend(&report, "rules only: launch-logs ", Pct(rules_first, n_first), ", dev ",
                  Pct(rules_dev, n_dev), "\n");

  // Leave-one-thread-out guesses per alpha.
  struct Best {
    double alpha = 0, threshold = 1;
    double smooth = -1;
  } best;
  std::map<double, std::vector<FallbackGuess>> guesses_of;
  for (double alpha : kAlphas) guesses_of[alpha].resize(docs.size());
  // Each fold is counted once and re-smoothed for every alpha (the same
  // models as one Train per fold and alpha, a sixth of the work: this runs
  // in the test that checks the checked-in model, and the folds grow with
  // the corpus).
  for (const auto& [thread, members] : threads) {
    std::set<int> out(members.begin(), members.end());
    std::vector<const FallbackExample*> train;
    for (size_t i = 0; i < docs.size(); ++i) {
      if (!out.count(static_cast<int>(i)) && trainable(static_cast<int>(i))) {
        train.push_back(&docs[i].example);
      }
    }
    FallbackModel m = FallbackModel::Train(train, kAlphas[0], kMinDocFreq, 1.0);
    for (double alpha : kAlphas) {
      if (alpha != kAlphas[0]) m.Resmooth(alpha);
      for (int i : members) {
        if (docs[i].sees_error) guesses_of[alpha][i] = m.Predict(docs[i].example.features);
      }
    }
  }
  for (double alpha : kAlphas) {
    std::vector<FallbackGuess> guesses = std::move(guesses_of[alpha]);
    // Right answers of rules + fallback per threshold (0.00 .. 1.00), and
    // the guesses that answered (changed the rules' `unknown`) and were wrong.
    std::vector<int> correct(101, 0), correct_dev(101, 0), wrong_guess(101, 0), guessed(101, 0);
    std::vector<double> utility(101, 0.0);
    for (int t = 0; t <= 100; ++t) {
      for (size_t i = 0; i < docs.size(); ++i) {
        const std::string fin = Final(docs[i], guesses[i], t / 100.0);
        bool ok = Right(docs[i].label, fin);
        correct[t] += ok;
        if (docs[i].split == "dev") correct_dev[t] += ok;
        if (fin != docs[i].rule_top) {
          ++guessed[t];
          wrong_guess[t] += !ok;
        }
      }
      utility[t] = correct[t] - kWrongGuessCost * wrong_guess[t];
    }
    // The fallback alone on every log that shows an error, as if no rule
    // knew its wording: right when its guess is the label, or when it
    // abstains on a log labelled unknown.
    std::vector<int> alone(101, 0);
    int error_logs = 0;
    for (size_t i = 0; i < docs.size(); ++i) error_logs += docs[i].sees_error;
    for (int t = 0; t <= 100; ++t) {
      for (size_t i = 0; i < docs.size(); ++i) {
        if (!docs[i].sees_error) continue;
        const FallbackGuess& g = guesses[i];
        bool fires = g.confidence >= t / 100.0 && g.failure_class != "unknown" &&
                     g.failure_class != "none";
        std::string said = fires ? g.failure_class : "unknown";
        alone[t] += Right(docs[i].label, said);
      }
    }
    report += "  fallback alone on the logs with an error:";
    for (int t = 0; t <= 100; t += 10) absl::StrAppend(&report, "  ", t / 100.0, ": ", alone[t]);
    absl::StrAppend(&report, " (of ", error_logs, ")\n");
    int top = *std::max_element(correct.begin(), correct.end());
    // The threshold: the best mean over a window of +-0.02 (a peak one
    // threshold wide is noise on this many logs), the first one on a tie.
    auto smoothed = [](const std::vector<double>& v) {
      std::vector<double> out(101, 0.0);
      for (int t = 0; t <= 100; ++t) {
        int n = 0;
        for (int u = std::max(0, t - 2); u <= std::min(100, t + 2); ++u, ++n) out[t] += v[u];
        out[t] /= n;
      }
      return out;
    };
    auto best_of = [](const std::vector<double>& v) {
      int chosen = 0;
      for (int t = 1; t <= 100; ++t) {
        if (v[t] > v[chosen] + 1e-9) chosen = t;
      }
      return chosen;
    };
    std::vector<double> smooth = smoothed(utility);
    const int chosen = best_of(smooth);
    // The same choice with wrong guesses free (right answers alone), for the
    // report: what the cost changes.
    const int chosen_free = best_of(smoothed(std::vector<double>(correct.begin(), correct.end())));
    char line[320];
    std::snprintf(line, sizeof(line),
                  "alpha %.2f: best %d/%zu right; chosen threshold %.2f (utility window mean "
                  "%.1f): %d right, dev %d/%d, %d guesses of which %d wrong; wrong guesses "
                  "free: threshold %.2f, %d right, %d guesses of which %d wrong\n",
                  alpha, top, docs.size(), chosen / 100.0, smooth[chosen], correct[chosen],
                  correct_dev[chosen], n_dev, guessed[chosen], wrong_guess[chosen],
                  chosen_free / 100.0, correct[chosen_free], guessed[chosen_free],
                  wrong_guess[chosen_free]);
    report += line;
    report += "  threshold: right (dev right) guesses/wrong";
    for (int t = 0; t <= 100; t += 10) {
      absl::StrAppend(&report, "  ", t / 100.0, ": ", correct[t], " (", correct_dev[t], ") ",
                      guessed[t], "/", wrong_guess[t]);
    }
    report += "\n";
    if (smooth[chosen] > best.smooth + 1e-9) {
      best.smooth = smooth[chosen];
      best.alpha = alpha;
      best.threshold = chosen / 100.0;
    }
    guesses_of[alpha] = std::move(guesses);
  }

  // The chosen parameters' cross-validated figures.
  const std::vector<FallbackGuess>& guesses = guesses_of[best.alpha];
  int cv_dev = 0, cv_first = 0, fired = 0, fired_right = 0, none_fired = 0;
  std::map<std::string, std::pair<int, int>> per_class;  // dev: label -> (ok, n)
  std::map<std::string, int> none_class_guess;
  for (size_t i = 0; i < docs.size(); ++i) {
    const Doc& d = docs[i];
    std::string fin = Final(d, guesses[i], best.threshold);
    bool ok = Right(d.label, fin);
    (d.split == "dev" ? cv_dev : cv_first) += ok;
    if (fin != d.rule_top) {
      ++fired;
      fired_right += ok;
      if (d.label == "none") ++none_fired;
    }
    if (d.split == "dev") {
      per_class[d.label].first += ok;
      per_class[d.label].second += 1;
    }
  }
  char line[256];
  std::snprintf(line, sizeof(line), "chosen: alpha %.2f, threshold %.2f\n", best.alpha,
                best.threshold);
  report += line;
  absl::StrAppend(&report, "leave-one-thread-out, rules + fallback: launch-logs ",
                  Pct(cv_first, n_first), ", dev ", Pct(cv_dev, n_dev), "\n");
  absl::StrAppend(&report, "fallback fired on ", fired, " logs, right on ", fired_right,
                  "; on a `none` log: ", none_fired, "\n");
  if (std::getenv("DCU_FALLBACK_VERBOSE") != nullptr) {
    for (size_t i = 0; i < docs.size(); ++i) {
      const Doc& d = docs[i];
      if (d.rule_top != "unknown") continue;
      char row[400];
      std::snprintf(row, sizeof(row), "  cv %s/%s label=%s err=%d guess=%s %.2f (%s)\n",
                    d.split.c_str(), d.file.c_str(), d.label.c_str(), d.sees_error,
                    guesses[i].failure_class.c_str(), guesses[i].confidence,
                    guesses[i].runner_up.c_str());
      report += row;
    }
  }
  // Arbitration, measured and not used unless it helps: where the rules'
  // finding rests on frames only, would the fallback's confident guess do
  // better than the rule?
  {
    int frames = 0, rule_right = 0, guess_right = 0, guess_confident = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
      const Doc& d = docs[i];
      if (!d.rule_from_frames) continue;
      ++frames;
      rule_right += Right(d.label, d.rule_top);
      if (guesses[i].confidence >= best.threshold && guesses[i].failure_class != "unknown" &&
          guesses[i].failure_class != "none") {
        ++guess_confident;
        guess_right += Right(d.label, guesses[i].failure_class);
      }
    }
    absl::StrAppend(&report, "frames-only rule findings: ", frames, ", rule right on ",
                    rule_right, "; fallback confident on ", guess_confident, ", right on ",
                    guess_right, "\n");
  }
  report += "dev per label (ok/n), cross-validated:\n";
  for (const auto& [label, on] : per_class) {
    absl::StrAppend(&report, "  ", label, " ", on.first, "/", on.second, "\n");
  }

  std::vector<const FallbackExample*> all;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (trainable(static_cast<int>(i))) all.push_back(&docs[i].example);
  }
  FallbackModel model = FallbackModel::Train(all, best.alpha, kMinDocFreq, best.threshold);
  absl::StrAppend(&report, "model: ", model.class_count(), " classes, ", model.feature_count(),
                  " features, trained on ", all.size(), " logs that show an error\n");
  FallbackTrainingResult result;
  result.model_text = model.Serialize();
  result.report = std::move(report);
  return result;
}

}  // namespace dcu::modelkit
