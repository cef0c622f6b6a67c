#include "modelkit/startup_progress.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/enum_names.h"
#include "modelkit/diagnosis/log_normalizer.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::StartupActivity;
using dcufleet::v1::StartupPhase;
using dcufleet::v1::StartupProgress;

constexpr size_t kMaxStoredLine = 300;

// Hand-written matching, not regexes: the agent runs this on a 64 KiB tail
// every half second per starting instance, and the patterns are fixed
// phrases with numbers after them.

std::string Cut(absl::string_view s) {
  if (s.size() <= kMaxStoredLine) return std::string(s);
  // Do not cut a UTF-8 sequence (tqdm bars are made of U+2588 blocks).
  size_t n = kMaxStoredLine;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads a number at the start of `s` ("1,234", "15.2661", "22.60"): digits,
// thousands commas between digits, one decimal point. Returns false when `s`
// does not start with a digit. Advances `s` past it.
bool ReadNumber(absl::string_view& s, double* out) {
  size_t i = 0;
  std::string digits;
  bool seen_point = false;
  while (i < s.size() && digits.size() < 40) {
    char c = s[i];
    if (IsDigit(c)) {
      digits.push_back(c);
    } else if (c == ',' && !seen_point && !digits.empty() && i + 1 < s.size() &&
               IsDigit(s[i + 1])) {
      // a thousands separator: skip it
    } else if (c == '.' && !seen_point && !digits.empty() && i + 1 < s.size() &&
               IsDigit(s[i + 1])) {
      seen_point = true;
      digits.push_back('.');
    } else {
      break;
    }
    ++i;
  }
  if (digits.empty()) return false;
  double v = std::strtod(digits.c_str(), nullptr);
  if (!std::isfinite(v)) return false;
  *out = v;
  s.remove_prefix(i);
  return true;
}

// The number right after the first occurrence of `key` (blanks skipped).
bool NumberAfter(absl::string_view text, absl::string_view key, double* out,
                 absl::string_view* rest = nullptr) {
  size_t pos = text.find(key);
  if (pos == absl::string_view::npos) return false;
  absl::string_view s = text.substr(pos + key.size());
  s = absl::StripLeadingAsciiWhitespace(s);
  if (!ReadNumber(s, out)) return false;
  if (rest) *rest = s;
  return true;
}

// A count the log prints (blocks, tokens) as an integer: false for one no
// engine prints (ReadNumber takes up to 40 digits; a double past int64's
// range has no integer, and converting it is undefined -- the startup_log
// fuzz target found "#tokens: " followed by 40 digits).
bool CountFrom(double v, int64_t* out) {
  if (!(v >= 0 && v <= 1e15)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// "00:10" or "1:02:03" → seconds; false for "?" and anything else.
bool ReadClock(absl::string_view s, double* out) {
  double total = 0;
  int parts = 0;
  while (!s.empty()) {
    size_t i = 0;
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i == 0 || i > 6) return false;
    int v = 0;
    for (size_t k = 0; k < i; ++k) v = v * 10 + (s[k] - '0');
    total = total * 60 + v;
    ++parts;
    s.remove_prefix(i);
    if (s.empty()) break;
    if (s[0] != ':' || parts >= 3) return false;
    s.remove_prefix(1);
  }
  if (parts < 2) return false;
  *out = total;
  return true;
}

struct Tqdm {
  int done = 0;
  int total = 0;
  double seconds_per_item = 0;  // 0: unknown
  double eta_s = -1;            // -1: unknown
};

// The figures of a tqdm line after its description:
// " 41% Completed | 7/17 [00:10<00:14,  1.40s/it]" or
// " 50%|█████     | 33/67 [00:10<00:10,  3.20it/s]".
bool ParseTqdm(absl::string_view s, Tqdm* t) {
  size_t bar = s.rfind('|');
  if (bar == absl::string_view::npos) return false;
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(s.substr(bar + 1));
  double done = 0, total = 0;
  if (!ReadNumber(rest, &done) || rest.empty() || rest[0] != '/') return false;
  rest.remove_prefix(1);
  if (!ReadNumber(rest, &total)) return false;
  if (total <= 0 || total > 1e6 || done < 0 || done > total) return false;
  t->done = static_cast<int>(done);
  t->total = static_cast<int>(total);
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!absl::ConsumePrefix(&rest, "[")) return true;
  size_t close = rest.find(']');
  if (close == absl::string_view::npos) return true;
  absl::string_view in = rest.substr(0, close);
  size_t lt = in.find('<');
  size_t comma = in.find(',');
  if (lt != absl::string_view::npos && comma != absl::string_view::npos && comma > lt) {
    double eta = 0;
    if (ReadClock(in.substr(lt + 1, comma - lt - 1), &eta)) t->eta_s = eta;
    absl::string_view rate = absl::StripAsciiWhitespace(in.substr(comma + 1));
    double v = 0;
    if (ReadNumber(rate, &v) && v > 0) {
      if (absl::StartsWith(rate, "s/it")) t->seconds_per_item = v;
      if (absl::StartsWith(rate, "it/s")) t->seconds_per_item = 1.0 / v;
    }
  }
  return true;
}

class LineReader {
 public:
  LineReader(StartupProgress* p, int line_number, bool keep_evidence)
      : p_(p), line_number_(line_number), keep_evidence_(keep_evidence) {}

  void Apply(absl::string_view raw) {
    if (raw.size() > kMaxLineBytes) raw = raw.substr(0, kMaxLineBytes);
    NormalizedLine n = NormalizeLogLine(raw);
    text_ = absl::StripAsciiWhitespace(n.text);
    if (text_.empty()) return;
    if (!IsWaitingNotice(text_)) p_->set_last_line(Cut(text_));
    if (Failure(n)) return;
    if (p_->phase() == dcufleet::v1::STARTUP_READY) return;  // only FAILED leaves READY
    if (Ready()) return;
    if (Starting()) return;
    if (Weights()) return;
    if (Compiling()) return;
    if (KvCache()) return;
    HttpStartup();
  }

 private:
  // Lines an engine repeats while it waits for something else: they are
  // not progress of their own (a hang at init prints them forever).
  static bool IsWaitingNotice(absl::string_view t) {
    return absl::StrContains(t, "No available shared memory broadcast block found") ||
           (absl::StartsWith(t, "Waiting for ") &&
            absl::StrContains(t, "core engine proc(s) to start"));
  }

  void Evidence(absl::string_view figure) {
    if (!keep_evidence_) return;
    for (auto& e : *p_->mutable_evidence()) {
      if (e.figure() == figure) {
        e.set_line_number(line_number_);
        e.set_line(Cut(text_));
        return;
      }
    }
    auto* e = p_->add_evidence();
    e->set_figure(std::string(figure));
    e->set_line_number(line_number_);
    e->set_line(Cut(text_));
  }

  void SetPhase(StartupPhase phase,
                StartupActivity activity = dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED) {
    p_->set_phase(phase);
    p_->set_activity(activity);
    p_->set_failed_in(dcufleet::v1::STARTUP_PHASE_UNSPECIFIED);
    p_->set_phase_line(Cut(text_));
    Evidence("phase");
  }

  // Moves to `phase` only when that is not backwards (for lines that may
  // appear in more than one phase).
  void AtLeast(StartupPhase phase) {
    if (p_->phase() == dcufleet::v1::STARTUP_FAILED || p_->phase() < phase) SetPhase(phase);
  }

  void Engine(absl::string_view engine) {
    if (p_->engine() != engine) p_->set_engine(std::string(engine));
  }

  bool Failure(const NormalizedLine& n) {
    bool failed = false;
    if (n.exception && n.severity != LineSeverity::kWarning &&
        !absl::StrContains(text_.substr(0, text_.find(':')), "Warning")) {
      failed = true;
    }
    // V1's own words, which survive when the traceback was cut.
    if (absl::StrContains(text_, "EngineCore failed to start") ||
        absl::StartsWith(text_, "Engine core initialization failed") ||
        absl::StartsWith(text_, "Scheduler hit an exception") ||
        absl::StartsWith(text_, "Segmentation fault") ||
        absl::StrContains(text_, "Fatal Python error")) {
      failed = true;
    }
    if (!failed) return false;
    if (p_->phase() != dcufleet::v1::STARTUP_FAILED) {
      StartupPhase was = p_->phase();
      StartupActivity activity = p_->activity();
      SetPhase(dcufleet::v1::STARTUP_FAILED, activity);
      p_->set_failed_in(was);
    }
    return true;
  }

  bool Ready() {
    const absl::string_view t = text_;
    if (absl::StartsWith(t, "Application startup complete") ||
        absl::StartsWith(t, "Uvicorn running on http") ||
        absl::StrContains(t, "The server is fired up and ready to roll")) {
      if (absl::StrContains(t, "fired up")) Engine("sglang");
      SetPhase(dcufleet::v1::STARTUP_READY);
      return true;
    }
    // Lines only a serving engine prints prove it served (an excerpt of a
    // running server).
    if (absl::StrContains(t, "Avg prompt throughput:") ||
        absl::StartsWith(t, "Decode batch. #running-req") ||
        (absl::StrContains(t, "\"POST /v1/") && absl::StrContains(t, "HTTP/1.1\" 200"))) {
      SetPhase(dcufleet::v1::STARTUP_READY);
      return true;
    }
    return false;
  }

  bool Starting() {
    const absl::string_view t = text_;
    if (absl::StartsWith(t, "Automatically detected platform ")) {
      absl::string_view pl = t.substr(strlen("Automatically detected platform "));
      absl::ConsumeSuffix(&pl, ".");
      p_->set_platform(Cut(pl));
      Evidence("platform");
      Engine("vllm");
      AtLeast(dcufleet::v1::STARTUP_STARTING);
      return true;
    }
    for (absl::string_view key : {"vLLM API server version ", "Initializing a V1 LLM engine (v",
                                  "Initializing an LLM engine (v", "Initializing a V0 LLM engine (v"}) {
      size_t pos = t.find(key);
      if (pos == absl::string_view::npos) continue;
      absl::string_view v = t.substr(pos + key.size());
      size_t end = 0;
      while (end < v.size() && end < 64 && v[end] != ' ' && v[end] != ')') ++end;
      if (end > 0 && IsDigit(v[0])) {
        p_->set_engine_version(std::string(v.substr(0, end)));
        Evidence("engine_version");
      }
      Engine("vllm");
      AtLeast(dcufleet::v1::STARTUP_STARTING);
      return true;
    }
    // V0 before 0.4 printed no version: "Initializing an LLM engine with config: …".
    if (absl::StartsWith(t, "Initializing an LLM engine with config")) {
      Engine("vllm");
      AtLeast(dcufleet::v1::STARTUP_STARTING);
      return true;
    }
    if (absl::StartsWith(t, "server_args=ServerArgs(")) {
      Engine("sglang");
      AtLeast(dcufleet::v1::STARTUP_STARTING);
      return true;
    }
    // Distributed init. These lines are printed before the weights only.
    if (absl::StrContains(t, "distributed_init_method=") ||
        absl::StartsWith(t, "Init torch distributed begin") ||
        absl::StrContains(t, "ncclCommInitRank") || absl::StartsWith(t, "vLLM is using nccl==") ||
        absl::StartsWith(t, "Found nccl from library")) {
      if (p_->phase() <= dcufleet::v1::STARTUP_STARTING) {
        SetPhase(dcufleet::v1::STARTUP_STARTING, dcufleet::v1::STARTUP_ACTIVITY_DISTRIBUTED_INIT);
      }
      return true;
    }
    // The end of distributed init; model construction follows.
    if ((absl::StartsWith(t, "rank ") && absl::StrContains(t, " is assigned as DP rank")) ||
        absl::StartsWith(t, "Init torch distributed ends")) {
      if (p_->phase() <= dcufleet::v1::STARTUP_STARTING) SetPhase(dcufleet::v1::STARTUP_STARTING);
      return true;
    }
    return false;
  }

  bool Weights() {
    const absl::string_view t = text_;
    double v = 0;
    if (absl::StartsWith(t, "Starting to load model ") ||
        absl::StartsWith(t, "Load weight begin")) {
      if (absl::StartsWith(t, "Load weight begin")) Engine("sglang");
      SetPhase(dcufleet::v1::STARTUP_LOADING_WEIGHTS);
      return true;
    }
    size_t shards = t.find(" checkpoint shards:");
    if (shards != absl::string_view::npos && absl::StartsWith(t, "Loading ")) {
      Tqdm q;
      if (!ParseTqdm(t.substr(shards), &q)) return true;
      p_->set_shards_loaded(q.done);
      p_->set_shards_total(q.total);
      if (q.seconds_per_item > 0) p_->set_seconds_per_shard(q.seconds_per_item);
      if (q.eta_s >= 0) p_->set_shards_eta_s(q.eta_s);
      Evidence("shards");
      if (p_->phase() != dcufleet::v1::STARTUP_LOADING_WEIGHTS) {
        SetPhase(dcufleet::v1::STARTUP_LOADING_WEIGHTS);
      }
      return true;
    }
    // V1 (≥ 0.9): "Model loading took 15.2661 GiB and 31.05 seconds".
    if (NumberAfter(t, "Model loading took ", &v)) {
      p_->set_weights_gib(v);
      Evidence("weights_gib");
      double s = 0;
      // "… GiB and 31.05 seconds"; V0 "… GB and …"; ≥ 0.11 "… GiB memory and …".
      if (NumberAfter(t, " GiB and ", &s) || NumberAfter(t, " GB and ", &s) ||
          NumberAfter(t, " GiB memory and ", &s)) {
        p_->set_weights_load_s(s);
        Evidence("weights_load_s");
      }
      SetPhase(dcufleet::v1::STARTUP_WEIGHTS_LOADED);
      return true;
    }
    // V0 and early V1: "Loading model weights took 14.9595 GB".
    if (NumberAfter(t, "Loading model weights took ", &v)) {
      p_->set_weights_gib(v);
      Evidence("weights_gib");
      SetPhase(dcufleet::v1::STARTUP_WEIGHTS_LOADED);
      return true;
    }
    // "Loading weights took 30.13 seconds" (printed just before the above).
    if (NumberAfter(t, "Loading weights took ", &v)) {
      p_->set_weights_load_s(v);
      Evidence("weights_load_s");
      SetPhase(dcufleet::v1::STARTUP_WEIGHTS_LOADED);
      return true;
    }
    // SGLang: "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16,
    // avail mem=63.49 GB, mem usage=15.11 GB."
    if (absl::StartsWith(t, "Load weight end")) {
      Engine("sglang");
      if (NumberAfter(t, "mem usage=", &v)) {
        p_->set_weights_gib(v);
        Evidence("weights_gib");
      }
      SetPhase(dcufleet::v1::STARTUP_WEIGHTS_LOADED);
      return true;
    }
    return false;
  }

  void Compile(StartupActivity activity) {
    if (p_->phase() != dcufleet::v1::STARTUP_COMPILING || p_->activity() != activity) {
      SetPhase(dcufleet::v1::STARTUP_COMPILING, activity);
    }
  }

  bool Compiling() {
    const absl::string_view t = text_;
    double v = 0;
    if (NumberAfter(t, "torch.compile takes ", &v)) {
      p_->set_torch_compile_s(v);
      Evidence("torch_compile_s");
      Compile(dcufleet::v1::STARTUP_ACTIVITY_TORCH_COMPILE);
      return true;
    }
    if (absl::StrContains(t, "for vLLM's torch.compile") ||
        absl::StartsWith(t, "Dynamo bytecode transform time") ||
        absl::StartsWith(t, "Compiling a graph for ") ||
        absl::StartsWith(t, "Directly load the compiled graph")) {
      Compile(dcufleet::v1::STARTUP_ACTIVITY_TORCH_COMPILE);
      return true;
    }
    // Graph capture: V1 tqdm "Capturing CUDA graph shapes: 50%|…| 33/67",
    // "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): …| 2/5";
    // SGLang "Capturing batches (bs=160 avail_mem=…): …| 23/23"; V0
    // "Capturing cudagraphs for decoding." / "Capturing the model for CUDA graphs.".
    if (absl::StartsWith(t, "Capturing CUDA graph") || absl::StartsWith(t, "Capturing cudagraph") ||
        absl::StartsWith(t, "Capturing the model for CUDA graphs") ||
        absl::StartsWith(t, "Capturing batches (") ||
        absl::StartsWith(t, "Capture cuda graph begin") ||
        absl::StartsWith(t, "Capture CUDA graph begin")) {
      Tqdm q;
      size_t colon = t.find("): ");
      if (colon == absl::string_view::npos) colon = t.find(": ");
      if (colon != absl::string_view::npos && ParseTqdm(t.substr(colon), &q)) {
        p_->set_graphs_captured(q.done);
        p_->set_graphs_total(q.total);
        Evidence("graphs");
      }
      Compile(dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE);
      return true;
    }
    // "Graph capturing finished in 14 secs, took 0.20 GiB"; SGLang
    // "Capture cuda graph end. Time elapsed: 5.12 s".
    if (NumberAfter(t, "Graph capturing finished in ", &v) ||
        (absl::StartsWith(t, "Capture cuda graph end") && NumberAfter(t, "Time elapsed: ", &v))) {
      p_->set_graph_capture_s(v);
      Evidence("graph_capture_s");
      Compile(dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE);
      return true;
    }
    return false;
  }

  bool KvCache() {
    const absl::string_view t = text_;
    double v = 0;
    int64_t count = 0;
    absl::string_view rest;
    bool matched = false;
    // "# GPU blocks: 27605, # CPU blocks: 2048" (V0 and V1 ≤ 0.7); some
    // builds print "# gpu blocks".
    size_t gb = t.find("# GPU blocks:");
    if (gb == absl::string_view::npos) gb = t.find("# gpu blocks:");
    if (gb == absl::string_view::npos) gb = t.find("# cuda blocks:");  // V0 0.7
    if (gb == absl::string_view::npos) gb = t.find("# CUDA blocks:");
    if (gb != absl::string_view::npos && NumberAfter(t.substr(gb), "blocks:", &v) && CountFrom(v, &count)) {
      p_->set_gpu_blocks(count);
      Evidence("gpu_blocks");
      matched = true;
    } else if (NumberAfter(t, "Available KV cache memory: ", &v)) {
      p_->set_kv_cache_gib(v);
      Evidence("kv_cache_gib");
      matched = true;
    } else if (NumberAfter(t, "the rest of the memory reserved for KV Cache is ", &v)) {
      // V0 worker.py's memory profile summary.
      p_->set_kv_cache_gib(v);
      Evidence("kv_cache_gib");
      matched = true;
    } else if (NumberAfter(t, "GPU KV cache size: ", &v) && CountFrom(v, &count)) {
      p_->set_kv_tokens(count);
      Evidence("kv_tokens");
      matched = true;
    } else if (NumberAfter(t, "Maximum concurrency for ", &v, &rest)) {
      double x = 0;
      if (NumberAfter(rest, "tokens per request: ", &x) && CountFrom(v, &count)) {
        p_->set_max_concurrency_tokens(count);
        p_->set_max_concurrency(x);
        Evidence("max_concurrency");
        matched = true;
      }
    } else if (absl::StartsWith(t, "KV Cache is allocated")) {
      // SGLang: "KV Cache is allocated. #tokens: 421045, K size: 28.91 GB, V size: 28.91 GB".
      Engine("sglang");
      if (NumberAfter(t, "#tokens: ", &v) && CountFrom(v, &count)) {
        p_->set_kv_tokens(count);
        Evidence("kv_tokens");
      }
      double k = 0, val = 0;
      if (NumberAfter(t, "K size: ", &k) && NumberAfter(t, "V size: ", &val)) {
        p_->set_kv_cache_gib(k + val);
        Evidence("kv_cache_gib");
      }
      matched = true;
    } else if (NumberAfter(t, "max_total_num_tokens=", &v) && CountFrom(v, &count)) {
      // SGLang's scheduler summary.
      Engine("sglang");
      p_->set_kv_tokens(count);
      Evidence("kv_tokens");
      matched = true;
    } else if (NumberAfter(t, "init engine (profile, create kv cache, warmup model) took ", &v)) {
      p_->set_init_engine_s(v);
      Evidence("init_engine_s");
      // The engine's last line before the API server: the KV cache is
      // allocated and graphs are captured, so the phase is KV_CACHE_SIZED
      // (the last before READY) even after graph capture.
      SetPhase(dcufleet::v1::STARTUP_KV_CACHE_SIZED);
      return true;
    }
    if (!matched) return false;
    // The KV figures come as a group of lines: one phase change for them.
    if (p_->phase() != dcufleet::v1::STARTUP_KV_CACHE_SIZED) {
      SetPhase(dcufleet::v1::STARTUP_KV_CACHE_SIZED);
    }
    return true;
  }

  void HttpStartup() {
    const absl::string_view t = text_;
    if (absl::StartsWith(t, "Starting vLLM API server") ||
        absl::StartsWith(t, "Started server process") ||
        absl::StartsWith(t, "Waiting for application startup") ||
        absl::StartsWith(t, "Available routes are")) {
      // The phase stays what it was proven to be; an excerpt that starts
      // here proves no phase (the engine's own lines came before).
      if (p_->phase() != dcufleet::v1::STARTUP_PHASE_UNSPECIFIED &&
          p_->activity() != dcufleet::v1::STARTUP_ACTIVITY_HTTP_STARTUP) {
        p_->set_activity(dcufleet::v1::STARTUP_ACTIVITY_HTTP_STARTUP);
        Evidence("activity");
      }
    }
  }

  StartupProgress* p_;
  const int line_number_;
  const bool keep_evidence_;
  absl::string_view text_;
};

}  // namespace

void ApplyStartupLine(absl::string_view raw_line, int line_number, bool keep_evidence,
                      StartupProgress* progress) {
  LineReader(progress, line_number, keep_evidence).Apply(raw_line);
}

void AdvanceStartupProgress(absl::string_view text, const StartupParseOptions& options,
                            StartupProgress* progress) {
  int line_number = options.first_line_number;
  size_t start = 0;
  bool first = true;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool end = i == text.size();
    if (!end && text[i] != '\n' && text[i] != '\r') continue;
    absl::string_view line = text.substr(start, i - start);
    const bool skip = first && !options.starts_at_line;
    first = false;
    if (!skip && !line.empty()) ApplyStartupLine(line, line_number, options.keep_evidence, progress);
    if (!end && text[i] == '\n') ++line_number;
    start = i + 1;
  }
}

void StartupLogFollower::Advance(absl::string_view tail, bool starts_at_line,
                                 StartupProgress* progress) {
  // The complete lines, and the line still being written after them (a
  // tqdm bar's latest redraw: "\r... 6/17 [...]" has no terminator until
  // the next one).
  const size_t last_end = tail.find_last_of("\r\n");
  const absl::string_view lines = last_end == absl::string_view::npos ? "" : tail.substr(0, last_end + 1);
  const absl::string_view partial = tail.substr(lines.size());
  size_t from = 0;
  bool at_line = starts_at_line;
  if (!mark_.empty()) {
    // The first place of the mark in the new tail is the old end: what
    // follows is new. (The last place would skip new lines that repeat it.)
    const size_t at = lines.find(mark_);
    if (at != absl::string_view::npos) {
      from = at + mark_.size();
      at_line = true;  // the mark ends at a line end
    }
  }
  AdvanceStartupProgress(lines.substr(from), {.starts_at_line = at_line, .keep_evidence = false},
                         progress);
  if (!lines.empty()) mark_ = std::string(lines.substr(lines.size() - std::min(lines.size(), kMarkBytes)));
  // The partial line is read now, so a bar shows its latest figure, and
  // again, whole, once it ends: the mark stops before it. Reading the same
  // last line again, with no line between, lands where it did.
  if (!partial.empty() && (!lines.empty() || at_line)) {
    AdvanceStartupProgress(partial, {.starts_at_line = true, .keep_evidence = false}, progress);
  }
}

void StartupLogFollower::AdvanceFrom(absl::string_view lines, absl::string_view partial,
                                     StartupProgress* progress) {
  AdvanceStartupProgress(lines, {.starts_at_line = true, .keep_evidence = false}, progress);
  if (!partial.empty()) {
    AdvanceStartupProgress(partial, {.starts_at_line = true, .keep_evidence = false}, progress);
  }
}

StartupProgress ParseStartupLog(absl::string_view text, const StartupParseOptions& options) {
  StartupProgress p;
  AdvanceStartupProgress(text, options, &p);
  return p;
}

bool ApplyTritonCacheCount(int64_t files, StartupProgress* p) {
  if (files < 0) return false;
  if (p->triton_cache_files() == 0 && p->triton_cache_files_at_start() == 0) {
    // The first count: the baseline.
    p->set_triton_cache_files_at_start(files);
    p->set_triton_cache_files(files);
    return false;
  }
  if (files <= p->triton_cache_files()) {
    p->set_triton_cache_files(std::max<int64_t>(files, p->triton_cache_files_at_start()));
    return false;
  }
  p->set_triton_cache_files(files);
  // Triton compiles during torch.compile and the profile run: before the KV
  // cache is sized it is what the engine is doing (graph capture has its own
  // k/n, and after it the kernels are warm-up's).
  const StartupPhase ph = p->phase();
  if (ph != dcufleet::v1::STARTUP_READY && ph != dcufleet::v1::STARTUP_FAILED &&
      p->activity() != dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE &&
      ph != dcufleet::v1::STARTUP_KV_CACHE_SIZED) {
    // During torch.compile the files are Inductor's Triton kernels: the
    // count says more than "torch.compile" does.
    p->set_phase(dcufleet::v1::STARTUP_COMPILING);
    p->set_activity(dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE);
    p->set_phase_line(absl::StrCat(files - p->triton_cache_files_at_start(),
                                   " new files in TRITON_CACHE_DIR"));
  }
  return true;
}

bool StartupReportDiffers(const StartupProgress& a, const StartupProgress& b) {
  return a.phase() != b.phase() || a.activity() != b.activity() ||
         a.failed_in() != b.failed_in() || a.engine_version() != b.engine_version() ||
         a.platform() != b.platform() || a.shards_loaded() != b.shards_loaded() ||
         a.shards_total() != b.shards_total() || a.weights_gib() != b.weights_gib() ||
         a.weights_load_s() != b.weights_load_s() || a.torch_compile_s() != b.torch_compile_s() ||
         a.graphs_captured() != b.graphs_captured() || a.graphs_total() != b.graphs_total() ||
         a.graph_capture_s() != b.graph_capture_s() ||
         a.triton_cache_files() != b.triton_cache_files() ||
         a.kv_cache_gib() != b.kv_cache_gib() || a.gpu_blocks() != b.gpu_blocks() ||
         a.kv_tokens() != b.kv_tokens() || a.max_concurrency() != b.max_concurrency() ||
         a.max_concurrency_tokens() != b.max_concurrency_tokens() ||
         a.init_engine_s() != b.init_engine_s() || a.phase_since_ms() != b.phase_since_ms() ||
         a.stopped_by() != b.stopped_by();
}

bool StartupAdvanced(const StartupProgress& before, const StartupProgress& after) {
  return StartupReportDiffers(before, after) || before.last_line() != after.last_line();
}

std::string DescribeStartupPlace(const StartupProgress& p) {
  StartupPhase phase = p.phase() == dcufleet::v1::STARTUP_FAILED ? p.failed_in() : p.phase();
  std::string out(phase == dcufleet::v1::STARTUP_PHASE_UNSPECIFIED
                      ? absl::string_view("an unknown phase")
                      : common::StartupPhaseName(phase));
  std::string detail(common::StartupActivityName(p.activity()));
  if (p.activity() == dcufleet::v1::STARTUP_ACTIVITY_GRAPH_CAPTURE && p.graphs_total() > 0) {
    absl::StrAppend(&detail, " ", p.graphs_captured(), "/", p.graphs_total());
  } else if (p.activity() == dcufleet::v1::STARTUP_ACTIVITY_TRITON_COMPILE) {
    absl::StrAppend(&detail, ", ", p.triton_cache_files() - p.triton_cache_files_at_start(),
                    " new cache files");
  } else if (phase == dcufleet::v1::STARTUP_LOADING_WEIGHTS && p.shards_total() > 0) {
    detail = absl::StrCat("shard ", p.shards_loaded(), "/", p.shards_total());
  }
  if (!detail.empty()) absl::StrAppend(&out, " (", detail, ")");
  return out;
}

}  // namespace dcu::modelkit
