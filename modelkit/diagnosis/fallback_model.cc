#include "modelkit/diagnosis/fallback_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace dcu::modelkit {

namespace {

constexpr size_t kFbMaxTextBytes = 512;
constexpr size_t kFbMaxQuotedBytes = 96;
constexpr size_t kFbFramesUsed = 8;

bool FbIsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

const std::set<std::string>& FbStopWords() {
  static const auto* words = new std::set<std::string>{
      "the", "an", "to", "of", "in", "is", "and", "for", "on", "at", "be", "it", "this", "with",
      "or", "by", "as", "are", "was", "from", "that", "you", "your", "py", "line", "self",
      "return", "file", "if", "we", "has", "have", "please", "see", "above", "when", "which"};
  return *words;
}

// One whitespace-separated chunk that is a path: starts with '/', "./",
// "~/", a drive letter, or holds two or more '/'.
bool FbIsPathChunk(absl::string_view chunk) {
  if (chunk.empty()) return false;
  if (chunk[0] == '/' || absl::StartsWith(chunk, "./") || absl::StartsWith(chunk, "~/")) {
    return chunk.size() > 1;
  }
  if (chunk.size() > 2 && std::isalpha(static_cast<unsigned char>(chunk[0])) && chunk[1] == ':' &&
      (chunk[2] == '\\' || chunk[2] == '/')) {
    return true;
  }
  return std::count(chunk.begin(), chunk.end(), '/') >= 2;
}

void FbAddWords(absl::string_view chunk, std::vector<std::string>* out) {
  size_t i = 0;
  while (i < chunk.size()) {
    if (!FbIsWordChar(chunk[i])) {
      ++i;
      continue;
    }
    // "0x1f2e" -> <hex>
    if (chunk[i] == '0' && i + 2 < chunk.size() && chunk[i + 1] == 'x' &&
        std::isxdigit(static_cast<unsigned char>(chunk[i + 2]))) {
      size_t j = i + 2;
      while (j < chunk.size() && FbIsWordChar(chunk[j])) ++j;
      out->push_back("<hex>");
      i = j;
      continue;
    }
    size_t j = i;
    std::string word;
    while (j < chunk.size() && FbIsWordChar(chunk[j])) {
      char c = chunk[j];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        if (word.empty() || word.back() != '#') word.push_back('#');
      } else {
        word.push_back(c);
      }
      ++j;
    }
    i = j;
    // Strip leading/trailing underscores (dunder names keep their core).
    size_t a = word.find_first_not_of('_');
    size_t b = word.find_last_not_of('_');
    if (a == std::string::npos) continue;
    word = word.substr(a, b - a + 1);
    if (word.size() < 2 && word != "#") continue;
    if (FbStopWords().count(word)) continue;
    out->push_back(std::move(word));
  }
}

void FbAddPrefixed(absl::string_view prefix, const std::vector<std::string>& words,
                 std::vector<std::string>* out) {
  for (const std::string& w : words) out->push_back(absl::StrCat(prefix, w));
}

std::string FbLowerType(absl::string_view type) {
  std::string t = absl::AsciiStrToLower(type);
  return t.substr(0, 80);
}

std::string FbLastTypePart(const std::string& type) {
  size_t cut = type.find_last_of(".:");
  return cut == std::string::npos ? type : type.substr(cut + 1);
}

void FbAddErrorFeatures(const RaisedError& error, absl::string_view type_prefix,
                      absl::string_view word_prefix, absl::string_view pair_prefix,
                      std::vector<std::string>* out) {
  std::string type = FbLowerType(error.type);
  if (!type.empty()) {
    out->push_back(absl::StrCat(type_prefix, type));
    std::string last = FbLastTypePart(type);
    if (!last.empty() && last != type) out->push_back(absl::StrCat(type_prefix, last));
  }
  std::vector<std::string> words = FallbackTokens(error.message);
  FbAddPrefixed(word_prefix, words, out);
  if (!pair_prefix.empty()) {
    for (size_t i = 1; i < words.size(); ++i) {
      out->push_back(absl::StrCat(pair_prefix, words[i - 1], "_", words[i]));
    }
  }
}

bool FbErrorIsh(const NormalizedLine& line) {
  if (line.severity == LineSeverity::kError || line.exception) return true;
  if (line.text.size() < 6) return false;
  std::string lower = absl::AsciiStrToLower(
      absl::string_view(line.text).substr(0, std::min<size_t>(line.text.size(), kFbMaxTextBytes)));
  static const char* const kWords[] = {"error", "fail", "fatal", "abort", "cannot", "can't",
                                       "unable", "not supported", "unsupported", "not found",
                                       "invalid", "out of memory", "no such", "undefined"};
  for (const char* w : kWords) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

bool FallbackSeesError(const LogStructure& structure) {
  return structure.terminal_error >= 0 || structure.terminal_traceback >= 0 ||
         structure.error_before_cut_traceback >= 0;
}

std::vector<std::string> FallbackTokens(absl::string_view text) {
  text = text.substr(0, std::min(text.size(), kFbMaxTextBytes));
  std::string lower = absl::AsciiStrToLower(text);
  // Quoted names -> <q> (a quote after a letter is an apostrophe: "don't").
  std::string unquoted;
  unquoted.reserve(lower.size());
  for (size_t i = 0; i < lower.size(); ++i) {
    char c = lower[i];
    if ((c == '\'' || c == '"' || c == '`') && (i == 0 || !FbIsWordChar(lower[i - 1]))) {
      size_t close = lower.find(c, i + 1);
      if (close != std::string::npos && close > i + 1 && close - i <= kFbMaxQuotedBytes) {
        unquoted += " <q> ";
        i = close;
        continue;
      }
    }
    unquoted.push_back(c);
  }
  std::vector<std::string> out;
  for (absl::string_view chunk : absl::StrSplit(unquoted, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    if (chunk == "<q>") {
      out.push_back("<q>");
      continue;
    }
    // A path, possibly followed by ':' or ',' -> <path>.
    absl::string_view bare = chunk;
    while (!bare.empty() && (bare.back() == ':' || bare.back() == ',' || bare.back() == ')' ||
                             bare.back() == '.' || bare.back() == ';')) {
      bare.remove_suffix(1);
    }
    while (!bare.empty() && (bare.front() == '(' || bare.front() == '[')) bare.remove_prefix(1);
    if (FbIsPathChunk(bare)) {
      out.push_back("<path>");
      continue;
    }
    FbAddWords(chunk, &out);
  }
  return out;
}

std::vector<std::string> FallbackFeatures(const std::vector<NormalizedLine>& lines,
                                          const LogStructure& structure) {
  std::vector<std::string> out;
  const int terminal = structure.terminal_error;
  if (terminal >= 0) {
    FbAddErrorFeatures(structure.errors[terminal], "t:", "m:", "b:", &out);
  }
  // Other raised errors, the latest first: the cause of a chain, the error
  // before a traceback the log was cut in.
  int taken = 0;
  for (int e = static_cast<int>(structure.errors.size()) - 1;
       e >= 0 && taken < kFallbackOtherErrors; --e) {
    if (e == terminal) continue;
    FbAddErrorFeatures(structure.errors[e], "r:", "r:", "", &out);
    ++taken;
  }
  // Where it died: the innermost frames of the terminal traceback.
  if (structure.terminal_traceback >= 0) {
    const auto& frames = structure.tracebacks[structure.terminal_traceback].frames;
    size_t first = frames.size() > kFbFramesUsed ? frames.size() - kFbFramesUsed : 0;
    for (size_t f = first; f < frames.size(); ++f) {
      if (!frames[f].function.empty()) {
        out.push_back(absl::StrCat("f:", absl::AsciiStrToLower(frames[f].function).substr(0, 80)));
      }
      // The file's parts below site-/dist-packages (the package), else its
      // last three parts.
      std::string file = absl::AsciiStrToLower(frames[f].file);
      size_t pkg = file.rfind("-packages/");
      if (pkg != std::string::npos) {
        file = file.substr(pkg + 10);
      } else {
        std::vector<absl::string_view> parts = absl::StrSplit(file, '/', absl::SkipEmpty());
        size_t from = parts.size() > 3 ? parts.size() - 3 : 0;
        std::string tail;
        for (size_t p = from; p < parts.size(); ++p) absl::StrAppend(&tail, " ", parts[p]);
        file = tail;
      }
      std::replace(file.begin(), file.end(), '/', ' ');
      std::replace(file.begin(), file.end(), '.', ' ');
      std::vector<std::string> words;
      FbAddWords(file, &words);
      FbAddPrefixed("p:", words, &out);
    }
  }
  // Error-ish lines outside any raised error and traceback, from the end;
  // the same text (every rank's copy) once.
  std::set<absl::string_view> seen;
  int kept = 0;
  for (int i = static_cast<int>(lines.size()) - 1; i >= 0 && kept < kFallbackErrorLines; --i) {
    if (structure.error_of_line[i] >= 0) continue;
    LineRole role = structure.roles[i];
    if (role != LineRole::kOther) continue;
    const NormalizedLine& line = lines[i];
    if (line.text.empty() || !FbErrorIsh(line)) continue;
    if (!seen.insert(line.text).second) continue;
    FbAddPrefixed("e:", FallbackTokens(line.text), &out);
    ++kept;
  }
  return out;
}

FallbackModel FallbackModel::Train(const std::vector<const FallbackExample*>& examples,
                                   double alpha, int min_doc_freq, double threshold) {
  FallbackModel m;
  m.alpha_ = alpha;
  m.min_doc_freq_ = min_doc_freq;
  m.threshold_ = threshold;
  std::map<std::string, int> class_of;
  for (const FallbackExample* e : examples) class_of.emplace(e->label, 0);
  for (auto& [name, index] : class_of) {
    index = static_cast<int>(m.classes_.size());
    m.classes_.push_back(name);
  }
  m.class_docs_.assign(m.classes_.size(), 0);
  m.class_tokens_.assign(m.classes_.size(), 0);
  std::map<std::string, std::map<int, int64_t>> counts;
  std::map<std::string, int> doc_freq;
  for (const FallbackExample* e : examples) {
    int c = class_of[e->label];
    ++m.class_docs_[c];
    std::set<std::string> unique(e->features.begin(), e->features.end());
    for (const std::string& f : unique) {
      ++counts[f][c];
      ++doc_freq[f];
    }
  }
  for (auto& [feature, per_class] : counts) {
    if (doc_freq[feature] < min_doc_freq) continue;
    std::vector<std::pair<int, int64_t>> row(per_class.begin(), per_class.end());
    for (const auto& [c, n] : row) m.class_tokens_[c] += n;
    m.features_.emplace_back(feature, std::move(row));
  }
  m.Finish();
  return m;
}

void FallbackModel::Finish() {
  const size_t k = classes_.size();
  const double vocabulary = static_cast<double>(features_.size());
  log_prior_.assign(k, 0.0);
  log_unseen_.assign(k, 0.0);
  for (size_t c = 0; c < k; ++c) {
    // A uniform prior: the classes the rules miss are not the commonest
    // ones; leave-one-thread-out scored it one log better than the counts.
    log_prior_[c] = 0.0;
    log_unseen_[c] = std::log(alpha_ / (class_tokens_[c] + alpha_ * vocabulary));
  }
  feature_index_.clear();
  log_seen_.assign(features_.size(), log_unseen_);
  for (size_t f = 0; f < features_.size(); ++f) {
    feature_index_.emplace(features_[f].first, static_cast<int>(f));
    for (const auto& [c, n] : features_[f].second) {
      log_seen_[f][c] = std::log((n + alpha_) / (class_tokens_[c] + alpha_ * vocabulary));
    }
  }
}

FallbackGuess FallbackModel::Predict(const std::vector<std::string>& features,
                                     int terms_reported) const {
  FallbackGuess guess;
  const size_t k = classes_.size();
  if (k == 0) return guess;
  std::vector<int> known;
  {
    std::set<int> unique;
    for (const std::string& f : features) {
      auto it = feature_index_.find(f);
      if (it != feature_index_.end()) unique.insert(it->second);
    }
    known.assign(unique.begin(), unique.end());
  }
  std::vector<double> score = log_prior_;
  for (int f : known) {
    for (size_t c = 0; c < k; ++c) score[c] += log_seen_[f][c];
  }
  // Tempered posterior: Naive Bayes counts every word as independent
  // evidence, which makes its posterior near 0 or 1; dividing the scores by
  // the square root of the number of known features keeps it ordered and
  // usable as a confidence to abstain on.
  const double temper = std::sqrt(std::max<size_t>(1, known.size()));
  double best = -INFINITY;
  for (double s : score) best = std::max(best, s / temper);
  double sum = 0.0;
  std::vector<double> p(k);
  for (size_t c = 0; c < k; ++c) {
    p[c] = std::exp(score[c] / temper - best);
    sum += p[c];
  }
  size_t top = 0, second = k > 1 ? 1 : 0;
  for (size_t c = 0; c < k; ++c) {
    if (p[c] > p[top]) top = c;
  }
  second = top == 0 && k > 1 ? 1 : 0;
  for (size_t c = 0; c < k; ++c) {
    if (c != top && p[c] > p[second]) second = c;
  }
  guess.failure_class = classes_[top];
  guess.confidence = p[top] / sum;
  guess.runner_up = k > 1 ? classes_[second] : "";
  std::vector<std::pair<double, int>> ratio;
  for (int f : known) {
    double r = log_seen_[f][top] - log_seen_[f][second];
    if (r > 0) ratio.emplace_back(-r, f);
  }
  std::sort(ratio.begin(), ratio.end());
  for (size_t i = 0; i < ratio.size() && static_cast<int>(i) < terms_reported; ++i) {
    guess.deciding_terms.push_back(features_[ratio[i].second].first);
  }
  return guess;
}

std::string FallbackModel::Serialize() const {
  std::string out =
      "# The learned fallback of the launch-failure classifier: multinomial Naive Bayes counts\n"
      "# (one count per training log that has the feature). Generated by train_fallback from\n"
      "# tests/data/launch-logs and tests/data/diagnosis-corpus/dev only; do not edit by hand\n"
      "# (docs/diagnosis.md says how to regenerate it; a test checks that it is up to date).\n"
      "# param NAME VALUE | class NAME LOGS FEATURE_COUNT | feature NAME CLASS=COUNT,...\n";
  char threshold[32];
  std::snprintf(threshold, sizeof(threshold), "%.2f", threshold_);
  char alpha[32];
  std::snprintf(alpha, sizeof(alpha), "%.3f", alpha_);
  absl::StrAppend(&out, "param\talpha\t", alpha, "\n");
  absl::StrAppend(&out, "param\tmin_doc_freq\t", min_doc_freq_, "\n");
  absl::StrAppend(&out, "param\tthreshold\t", threshold, "\n");
  for (size_t c = 0; c < classes_.size(); ++c) {
    absl::StrAppend(&out, "class\t", classes_[c], "\t", class_docs_[c], "\t", class_tokens_[c],
                    "\n");
  }
  for (const auto& [name, row] : features_) {
    absl::StrAppend(&out, "feature\t", name, "\t");
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&out, i ? "," : "", classes_[row[i].first], "=", row[i].second);
    }
    out += "\n";
  }
  return out;
}

absl::StatusOr<FallbackModel> FallbackModel::Parse(absl::string_view text,
                                                   absl::string_view source) {
  FallbackModel m;
  std::map<std::string, int> class_of;
  int line_no = 0;
  bool have_threshold = false;
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", line_no, ": ", why));
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    if (f[0] == "param" && f.size() == 3) {
      double v = 0;
      if (!absl::SimpleAtod(f[2], &v)) return bad("param value is not a number");
      if (f[1] == "alpha") {
        if (v <= 0) return bad("alpha must be > 0");
        m.alpha_ = v;
      } else if (f[1] == "min_doc_freq") {
        m.min_doc_freq_ = static_cast<int>(v);
      } else if (f[1] == "threshold") {
        if (v < 0 || v > 1) return bad("threshold must be in [0, 1]");
        m.threshold_ = v;
        have_threshold = true;
      } else {
        return bad(absl::StrCat("unknown param '", f[1], "'"));
      }
    } else if (f[0] == "class" && f.size() == 4) {
      if (!m.features_.empty()) return bad("class after the features");
      int64_t docs = 0, tokens = 0;
      if (!absl::SimpleAtoi(f[2], &docs) || !absl::SimpleAtoi(f[3], &tokens) || docs < 0 ||
          tokens < 0) {
        return bad("class counts are not non-negative integers");
      }
      if (!class_of.emplace(std::string(f[1]), static_cast<int>(m.classes_.size())).second) {
        return bad(absl::StrCat("class '", f[1], "' twice"));
      }
      m.classes_.emplace_back(f[1]);
      m.class_docs_.push_back(docs);
      m.class_tokens_.push_back(tokens);
    } else if (f[0] == "feature" && f.size() == 3) {
      std::vector<std::pair<int, int64_t>> row;
      for (absl::string_view cell : absl::StrSplit(f[2], ',')) {
        std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(cell, '=');
        auto it = class_of.find(std::string(kv.first));
        int64_t n = 0;
        if (it == class_of.end()) return bad(absl::StrCat("unknown class '", kv.first, "'"));
        if (!absl::SimpleAtoi(kv.second, &n) || n <= 0) return bad("count is not a positive integer");
        row.emplace_back(it->second, n);
      }
      m.features_.emplace_back(std::string(f[1]), std::move(row));
    } else {
      return bad("expected 'param', 'class' or 'feature' with their fields");
    }
  }
  if (m.classes_.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no classes"));
  if (!have_threshold) return absl::InvalidArgumentError(absl::StrCat(source, ": no threshold"));
  m.Finish();
  return m;
}

}  // namespace dcu::modelkit
