#include "modelkit/diagnosis/log_structure.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dcu::modelkit {
namespace {

// Lines between a frame and the exception line that are still part of the
// frame: the source line, Python 3.11+ '^^^^' markers, 3.13's multi-line
// statements. More than this and the traceback was left unfinished.
constexpr int kMaxSourceLinesPerFrame = 6;
// A C++ "what():" belongs to the "terminate called" line at most this far above.
constexpr int kMaxWhatDistance = 4;
// A chain marker belongs to the traceback header at most this far below.
constexpr int kMaxChainDistance = 4;
// Longest exception type name read (a dotted Python path or a C++ type).
constexpr size_t kMaxTypeLength = 160;

bool IsIdentChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string Bounded(absl::string_view s, size_t limit) {
  return std::string(s.substr(0, std::min(s.size(), limit)));
}

void AppendBounded(std::string* out, absl::string_view piece) {
  if (out->size() >= kMaxMessageBytes) return;
  if (!out->empty()) out->push_back('\n');
  out->append(piece.data(), std::min(piece.size(), kMaxMessageBytes - out->size()));
}

bool IsTracebackHeader(absl::string_view text) {
  return absl::StrContains(text, "Traceback (most recent call last)");
}

bool IsChainMarker(absl::string_view text) {
  return absl::StartsWith(text, "The above exception was the direct cause of the following") ||
         absl::StartsWith(text, "During handling of the above exception");
}

// '^^^^^', '~~~^^^' (3.11+ position markers), "...<6 lines>..." (3.13 elision),
// "[Previous line repeated 996 more times]".
bool IsSourceDecoration(absl::string_view text) {
  if (text.empty()) return false;
  if (absl::StartsWith(text, "...<") || absl::StartsWith(text, "[Previous line repeated")) {
    return true;
  }
  return text.find_first_not_of("^~ ") == absl::string_view::npos;
}

// Another process's INFO/WARNING line printed into the middle of a traceback.
bool IsInterleavedNoise(const NormalizedLine& line) {
  return line.level_from_prefix && (line.severity == LineSeverity::kDebugInfo ||
                                    line.severity == LineSeverity::kWarning);
}

// Native error lines that end runs. Returns false for anything else.
bool ParseNativeError(absl::string_view text, RaisedError* error) {
  auto set = [&](ErrorOrigin origin, absl::string_view type, absl::string_view message) {
    error->origin = origin;
    error->type = std::string(type);
    error->message = Bounded(message, kMaxMessageBytes);
    return true;
  };
  static constexpr absl::string_view kTerminate = "terminate called after throwing an instance of '";
  if (absl::StartsWith(text, kTerminate)) {
    absl::string_view rest = text.substr(kTerminate.size());
    size_t quote = rest.find('\'');
    return set(ErrorOrigin::kCppException,
               Bounded(rest.substr(0, std::min(quote, rest.size())), kMaxTypeLength), "");
  }
  // "terminate called without an active exception" / "... recursively": a
  // std::terminate with nothing to say what().
  if (absl::StartsWith(text, "terminate called ")) {
    return set(ErrorOrigin::kCppException, "terminate", text);
  }
  // libc++ (macOS builds of llama.cpp, Ollama's runner): "libc++abi:
  // terminating due to uncaught exception of type std::runtime_error: msg"
  // (older "terminating with uncaught exception of type ...", "libc++abi.dylib: ...").
  if (absl::StartsWith(text, "libc++abi")) {
    static constexpr absl::string_view kOfType = "uncaught exception of type ";
    size_t at = text.find(kOfType);
    if (at != absl::string_view::npos && at < 80) {
      absl::string_view rest = text.substr(at + kOfType.size());
      size_t colon = rest.find(": ");
      absl::string_view type = rest.substr(0, std::min(colon, rest.size()));
      absl::string_view message =
          colon == absl::string_view::npos ? absl::string_view() : rest.substr(colon + 2);
      return set(ErrorOrigin::kCppException, Bounded(type, kMaxTypeLength), message);
    }
  }
  if (absl::StartsWith(text, "panic: ")) return set(ErrorOrigin::kGoPanic, "panic", text.substr(7));
  // Rust: "thread 'main' panicked at 'msg', src/main.rs:10:5" (before Rust
  // 1.73) or "thread 'main' panicked at src/main.rs:10:5:" with the message
  // on the lines below (TGI's launcher and router, tokenizers).
  if (absl::StartsWith(text, "thread '")) {
    static constexpr absl::string_view kPanicked = "' panicked at ";
    size_t at = text.find(kPanicked);
    if (at != absl::string_view::npos && at < 120) {
      absl::string_view rest = text.substr(at + kPanicked.size());
      if (!rest.empty() && rest[0] == '\'') {
        rest.remove_prefix(1);
        // The location follows the message's closing quote: "', file:line:col".
        size_t end = rest.rfind("', ");
        if (end != absl::string_view::npos) rest = rest.substr(0, end);
        return set(ErrorOrigin::kNativeError, "panicked", rest);
      }
      return set(ErrorOrigin::kNativeError, "panicked", "");
    }
  }
  // Go's runtime: "fatal error: all goroutines are asleep", "fatal error:
  // runtime: out of memory" (compilers print "<file>:<l>:<c>: fatal error:").
  if (absl::StartsWith(text, "fatal error: ")) {
    return set(ErrorOrigin::kNativeError, "fatal error", text.substr(13));
  }
  // glog/abseil CHECK failures (the "F1204 ..." prefix is gone): "Check
  // failed: x == y (1 vs. 2) message".
  if (absl::StartsWith(text, "Check failed: ")) {
    return set(ErrorOrigin::kNativeError, "Check failed", text.substr(14));
  }
  for (absl::string_view prefix : {"LLVM ERROR: ", "Fatal Python error: "}) {
    if (absl::StartsWith(text, prefix)) {
      return set(ErrorOrigin::kNativeError, prefix.substr(0, prefix.size() - 2),
                 text.substr(prefix.size()));
    }
  }
  // Searches look near the start of the line only: they stay bounded on a
  // 10 MB line, and most lines (INFO noise) are rejected by one cheap scan.
  absl::string_view head = text.substr(0, std::min<size_t>(text.size(), 220));
  if (absl::StartsWith(text, "GGML_ASSERT") ||
      (head.find("GGML_") != absl::string_view::npos && absl::StrContains(head, ": GGML_ASSERT("))) {
    return set(ErrorOrigin::kNativeError, "GGML_ASSERT", text);
  }
  // "HIP error: invalid device function" / "CUDA error: out of memory" as a
  // runtime prints them (the same words after "RuntimeError: " are the
  // Python exception's message and never get here).
  if (head.find("rror") != absl::string_view::npos) {
    for (absl::string_view word : {"HIP error", "CUDA error", "hipError", "cudaError"}) {
      size_t at = head.find(word);
      if (at != absl::string_view::npos && at < 200) {
        return set(ErrorOrigin::kNativeError,
                   word[0] == 'H' || word[0] == 'h' ? "HIP error" : "CUDA error", text);
      }
    }
  }
  // llama.cpp / ggml / Ollama's CLI: "error: ...", "Error: ...",
  // "llama_model_load: error loading model: ...", "llama_init_from_file: failed to load model".
  if (absl::StartsWith(text, "error: ") || absl::StartsWith(text, "Error: ")) {
    return set(ErrorOrigin::kNativeError, "error", text.substr(7));
  }
  size_t i = 0;
  while (i < text.size() && i < 80 && IsIdentChar(text[i])) ++i;
  // llama.cpp's server prefixes its function names with a short tag and
  // blanks ("srv    load_model: failed to load model, '...'", "slot ... ").
  if (i > 0 && i <= 4 && i < text.size() && text[i] == ' ') {
    size_t j = i;
    while (j < text.size() && j < 16 && text[j] == ' ') ++j;
    size_t k = j;
    while (k < text.size() && k < 96 && IsIdentChar(text[k])) ++k;
    if (k > j && k + 2 < text.size() && text[k] == ':' && text[k + 1] == ' ') i = k;
  }
  if (i >= 3 && i + 2 < text.size() && text[i] == ':' && text[i + 1] == ' ') {
    absl::string_view rest = text.substr(i + 2);
    if (absl::StartsWith(rest, "error") || absl::StartsWith(rest, "failed to ")) {
      return set(ErrorOrigin::kNativeError, "error", rest);
    }
  }
  for (absl::string_view signal :
       {"Segmentation fault", "Aborted (core dumped)", "Illegal instruction"}) {
    if (absl::StartsWith(text, signal)) return set(ErrorOrigin::kNativeError, "signal", text);
  }
  return false;
}

// Go frames: "main.(*Server).load(0xc000...)" above "\t/go/src/server.go:123 +0x1d".
bool ParseGoFrame(absl::string_view function_line, absl::string_view file_line,
                  TracebackFrame* frame) {
  if (function_line.empty() || function_line.back() != ')') return false;
  size_t go = file_line.find(".go:");
  if (go == absl::string_view::npos || file_line.empty() || file_line[0] != '/') return false;
  size_t open = function_line.rfind('(');
  if (open == absl::string_view::npos || open == 0) return false;
  frame->function = Bounded(function_line.substr(0, open), kMaxTypeLength);
  frame->file = Bounded(file_line.substr(0, go + 3), kMaxMessageBytes);
  return true;
}

class StructureReader {
 public:
  StructureReader(const std::vector<NormalizedLine>& lines, const FollowOnPredicate& is_follow_on)
      : lines_(lines), is_follow_on_(is_follow_on) {
    out_.roles.assign(lines.size(), LineRole::kOther);
    out_.error_of_line.assign(lines.size(), -1);
  }

  LogStructure Read() {
    for (int i = 0; i < static_cast<int>(lines_.size()); ++i) Step(i);
    ChooseTerminal();
    return std::move(out_);
  }

 private:
  enum class State { kOutside, kFrames, kMessage };

  // A frame wrapped after its file name by a terminal or a paste
  // ('File "/x/parallel_state.py"' then ', line 1121, in f' on the next
  // line): read as one frame on the second line. Each line is joined at most
  // once with the one before it, so this stays linear.
  bool ParseWrappedFrame(int i, TracebackFrame* frame) const {
    if (i == 0 || !absl::StartsWith(lines_[i].text, ", line ")) return false;
    // Another process's INFO line may sit between the two halves.
    int p = i - 1;
    while (p > 0 && i - p < 4 && IsInterleavedNoise(lines_[p])) --p;
    const std::string& prev = lines_[p].text;
    if (!absl::StartsWith(prev, "File \"") || !absl::EndsWith(prev, "\"") ||
        prev.find("\", line ") != std::string::npos) {
      return false;
    }
    return ParsePythonFrame(absl::StrCat(prev, lines_[i].text), frame);
  }

  void Step(int i) {
    const NormalizedLine& line = lines_[i];
    const std::string& text = line.text;
    if (IsTracebackHeader(text)) {
      StartTraceback(i);
      out_.tracebacks.back().has_header = true;
      out_.roles[i] = LineRole::kTracebackHeader;
      // "EngineCore hit an exception: Traceback (most recent call last):"
      return;
    }
    if (IsChainMarker(text)) {
      state_ = State::kOutside;
      last_chain_marker_ = i;
      out_.roles[i] = LineRole::kChainMarker;
      return;
    }
    TracebackFrame frame;
    if (ParsePythonFrame(text, &frame) || ParseWrappedFrame(i, &frame)) {
      if (state_ != State::kFrames) StartTraceback(i);
      frame.line = i;
      AddFrame(std::move(frame));
      out_.roles[i] = LineRole::kFrame;
      source_lines_ = 0;
      return;
    }
    switch (state_) {
      case State::kFrames:
        if (text.empty() || IsInterleavedNoise(line)) return;
        if (StartPythonError(i, /*strict=*/false)) return;
        // The line under a frame is its source ("raise RuntimeError('CUDA
        // error: ...')"); a native error after that ends the traceback.
        if (source_lines_ >= 1 && StartsNativeError(text)) {
          state_ = State::kOutside;
          break;
        }
        if (++source_lines_ <= kMaxSourceLinesPerFrame || IsSourceDecoration(text)) {
          out_.roles[i] = LineRole::kFrameSource;
          out_.tracebacks.back().last_line = i;
          return;
        }
        // The traceback stops without an exception: something else is
        // printed now (the log moved on, or a process died mid-traceback).
        state_ = State::kOutside;
        break;
      case State::kMessage:
        // Another process's INFO/WARNING line between a message's lines is
        // skipped, as between frames: it must not cut the message short
        // (the same log with and without it reads the same).
        if (IsInterleavedNoise(line)) return;
        if (!text.empty() && continuation_lines_ < kMaxContinuationLines &&
            !ParsePythonExceptionHeader(text, /*strict=*/true, nullptr, nullptr) &&
            !StartsNativeError(text)) {
          RaisedError& error = out_.errors.back();
          AppendBounded(&error.message, text);
          error.last_line = i;
          out_.roles[i] = LineRole::kErrorContinuation;
          out_.error_of_line[i] = static_cast<int>(out_.errors.size()) - 1;
          ++continuation_lines_;
          return;
        }
        state_ = State::kOutside;
        break;
      case State::kOutside:
        break;
    }
    StepOutside(i);
  }

  void StepOutside(int i) {
    const std::string& text = lines_[i].text;
    if (text.empty()) return;
    // A C++ exception's message comes on the "what():" line below it.
    static constexpr absl::string_view kWhat = "what():";
    if (absl::StartsWith(text, kWhat) && !out_.errors.empty()) {
      RaisedError& error = out_.errors.back();
      if (error.origin == ErrorOrigin::kCppException && error.message.empty() &&
          i - error.last_line <= kMaxWhatDistance) {
        error.message = Bounded(absl::StripLeadingAsciiWhitespace(text.substr(kWhat.size())),
                                kMaxMessageBytes);
        MarkErrorLine(i, LineRole::kErrorContinuation);
        error.last_line = i;
        state_ = State::kMessage;
        continuation_lines_ = 0;
        return;
      }
    }
    if (StartPythonError(i, /*strict=*/true)) return;
    RaisedError native;
    bool parsed = ParseNativeError(text, &native);
    // glog's LOG(FATAL) / CHECK under an "F..." prefix aborts after its line,
    // whatever the message says.
    if (!parsed && lines_[i].fatal_prefix) {
      native.origin = ErrorOrigin::kNativeError;
      native.type = "fatal";
      native.message = Bounded(text, kMaxMessageBytes);
      parsed = true;
    }
    if (parsed) {
      native.first_line = native.last_line = i;
      out_.errors.push_back(std::move(native));
      MarkErrorLine(i, LineRole::kErrorHeader);
      if (out_.errors.back().origin == ErrorOrigin::kGoPanic) go_panic_ = true;
      // Native errors are one line; a C++ one continues on "what():", a Rust
      // panic of Rust 1.73+ on the lines below its location.
      state_ = State::kOutside;
      if (out_.errors.back().type == "panicked" && out_.errors.back().message.empty()) {
        state_ = State::kMessage;
        continuation_lines_ = 0;
      }
      return;
    }
    // Go: "goroutine 1 [running]:" then function/file line pairs.
    if (go_panic_ && i > 0) {
      TracebackFrame frame;
      if (ParseGoFrame(lines_[i - 1].text, text, &frame)) {
        if (go_traceback_ < 0) {
          StartTraceback(i - 1);
          go_traceback_ = static_cast<int>(out_.tracebacks.size()) - 1;
          out_.tracebacks.back().error = static_cast<int>(out_.errors.size()) - 1;
          out_.errors.back().traceback = go_traceback_;
          state_ = State::kOutside;
        }
        frame.line = i - 1;
        Traceback& tb = out_.tracebacks[go_traceback_];
        AddFrameTo(tb, std::move(frame));
        tb.last_line = i;
        out_.roles[i - 1] = LineRole::kFrame;
        out_.roles[i] = LineRole::kFrameSource;
      }
    }
  }

  bool StartsNativeError(absl::string_view text) {
    RaisedError ignored;
    return IsTracebackHeader(text) || ParseNativeError(text, &ignored);
  }

  // A Python exception header at line i: ends the open traceback (if any).
  bool StartPythonError(int i, bool strict) {
    std::string type;
    std::string message;
    if (!ParsePythonExceptionHeader(lines_[i].text, strict, &type, &message)) return false;
    // "UserWarning: ..." is printed like an exception but raises nothing.
    if (absl::EndsWith(type, "Warning")) return false;
    RaisedError error;
    error.origin = ErrorOrigin::kPythonException;
    error.type = std::move(type);
    error.message = std::move(message);
    error.first_line = error.last_line = i;
    if (state_ == State::kFrames && !out_.tracebacks.empty()) {
      error.traceback = static_cast<int>(out_.tracebacks.size()) - 1;
      out_.tracebacks.back().error = static_cast<int>(out_.errors.size());
      out_.tracebacks.back().last_line = i;
    }
    out_.errors.push_back(std::move(error));
    MarkErrorLine(i, LineRole::kErrorHeader);
    state_ = State::kMessage;
    continuation_lines_ = 0;
    return true;
  }

  void MarkErrorLine(int i, LineRole role) {
    out_.roles[i] = role;
    out_.error_of_line[i] = static_cast<int>(out_.errors.size()) - 1;
  }

  void StartTraceback(int i) {
    Traceback tb;
    tb.first_line = tb.last_line = i;
    tb.chained = last_chain_marker_ >= 0 && i - last_chain_marker_ <= kMaxChainDistance;
    out_.tracebacks.push_back(std::move(tb));
    state_ = State::kFrames;
    source_lines_ = 0;
  }

  void AddFrame(TracebackFrame frame) {
    Traceback& tb = out_.tracebacks.back();
    tb.last_line = frame.line;
    AddFrameTo(tb, std::move(frame));
  }

  static void AddFrameTo(Traceback& tb, TracebackFrame frame) {
    // Keep the innermost frames: they say where it died. Erasing from the
    // front of a vector of at most kMaxFramesKept is bounded work per frame.
    if (tb.frames.size() >= kMaxFramesKept) tb.frames.erase(tb.frames.begin());
    tb.frames.push_back(std::move(frame));
  }

  void ChooseTerminal() {
    for (RaisedError& error : out_.errors) {
      error.follow_on = is_follow_on_ && is_follow_on_(error);
    }
    for (int e = static_cast<int>(out_.errors.size()) - 1; e >= 0; --e) {
      if (!out_.errors[e].follow_on) {
        out_.terminal_error = e;
        break;
      }
    }
    if (out_.terminal_error < 0 && !out_.errors.empty()) {
      out_.terminal_error = static_cast<int>(out_.errors.size()) - 1;
    }
    int terminal_line = -1;
    if (out_.terminal_error >= 0) {
      const RaisedError& error = out_.errors[out_.terminal_error];
      out_.terminal_traceback = error.traceback;
      terminal_line = error.first_line;
    }
    // A traceback the log was cut in, after the terminal error (or with no
    // error at all), is where the run was last seen: the run went on after
    // that earlier error, so it is not the one it died of.
    if (!out_.tracebacks.empty()) {
      const Traceback& last = out_.tracebacks.back();
      // Frames resuming without a header after an exception are another
      // rank's copy of the same traceback, interleaved: not a later story.
      const bool later_story = out_.terminal_error < 0 || last.has_header;
      if (last.error < 0 && !last.frames.empty() && last.first_line > terminal_line &&
          later_story) {
        out_.terminal_traceback = static_cast<int>(out_.tracebacks.size()) - 1;
        out_.error_before_cut_traceback = out_.terminal_error;
        out_.terminal_error = -1;
        // The lines under its last frame are the source line, or (in a paste
        // that dropped it) the error itself.
        for (int i = last.frames.back().line + 1; i <= last.last_line; ++i) {
          if (out_.roles[i] == LineRole::kFrameSource) out_.cut_traceback_tail.push_back(i);
        }
      }
    }
  }

  const std::vector<NormalizedLine>& lines_;
  const FollowOnPredicate& is_follow_on_;
  LogStructure out_;
  State state_ = State::kOutside;
  int source_lines_ = 0;
  int continuation_lines_ = 0;
  int last_chain_marker_ = -1;
  bool go_panic_ = false;
  int go_traceback_ = -1;
};

}  // namespace

bool ParsePythonFrame(absl::string_view text, TracebackFrame* frame) {
  if (!absl::StartsWith(text, "File ")) return false;
  absl::string_view rest = text.substr(5);
  absl::string_view file;
  absl::string_view after;
  if (!rest.empty() && rest[0] == '"') {
    // CPython: File "/x/y.py", line 12, in f
    size_t close = rest.find("\", line ");
    if (close == absl::string_view::npos) return false;
    file = rest.substr(1, close - 1);
    after = rest.substr(close + 8);
    size_t digits = 0;
    while (digits < after.size() && absl::ascii_isdigit(static_cast<unsigned char>(after[digits]))) {
      ++digits;
    }
    if (digits == 0) return false;
    after.remove_prefix(digits);
    if (!absl::StartsWith(after, ", in ")) {
      // `File "<string>", line 1` (no function) is still a frame.
      if (!after.empty()) return false;
    } else {
      after.remove_prefix(5);
    }
  } else {
    // IPython: File ~/lib/python3.11/site-packages/vllm/llm.py:118, in LLM.__init__(self, ...)
    size_t in = rest.find(", in ");
    if (in == absl::string_view::npos) return false;
    absl::string_view location = rest.substr(0, in);
    size_t colon = location.rfind(':');
    if (colon == absl::string_view::npos || colon + 1 >= location.size()) return false;
    for (size_t k = colon + 1; k < location.size(); ++k) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(location[k]))) return false;
    }
    file = location.substr(0, colon);
    after = rest.substr(in + 5);
    size_t paren = after.find('(');
    if (paren != absl::string_view::npos) after = after.substr(0, paren);
  }
  if (frame != nullptr) {
    frame->file = Bounded(file, kMaxMessageBytes);
    frame->function = Bounded(absl::StripAsciiWhitespace(after), kMaxTypeLength);
  }
  return true;
}

bool ParsePythonExceptionHeader(absl::string_view text, bool strict, std::string* type,
                                std::string* message) {
  if (strict) {
    if (!IsExceptionLine(text)) return false;
    // IsExceptionLine also accepts native fatal lines; those are not Python.
    if (absl::StartsWith(text, "LLVM ERROR") || absl::StartsWith(text, "terminate called") ||
        absl::StartsWith(text, "GGML_ASSERT") || absl::StartsWith(text, "Fatal Python error")) {
      return false;
    }
  }
  size_t i = 0;
  size_t last_part = 0;
  while (i < text.size() && i <= kMaxTypeLength && (IsIdentChar(text[i]) || text[i] == '.')) {
    if (text[i] == '.') last_part = i + 1;
    ++i;
  }
  if (i == 0 || i > kMaxTypeLength || last_part >= i) return false;
  if (i < text.size() && text[i] != ':') return false;
  if (!absl::ascii_isupper(static_cast<unsigned char>(text[last_part]))) return false;
  // A bare "Error:" / "Warning:" is a level word, not a class.
  absl::string_view name = text.substr(0, i);
  if (name == "Error" || name == "Warning" || name == "Exception" || name == "ERROR" ||
      name == "WARNING" || name == "INFO") {
    return false;
  }
  if (type != nullptr) *type = std::string(name);
  if (message != nullptr) {
    absl::string_view rest = i < text.size() ? text.substr(i + 1) : absl::string_view();
    *message = Bounded(absl::StripLeadingAsciiWhitespace(rest), kMaxMessageBytes);
  }
  return true;
}

LogStructure ReadLogStructure(const std::vector<NormalizedLine>& lines,
                              const FollowOnPredicate& is_follow_on) {
  return StructureReader(lines, is_follow_on).Read();
}

}  // namespace dcu::modelkit
