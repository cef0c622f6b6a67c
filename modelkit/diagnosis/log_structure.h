#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "modelkit/diagnosis/log_normalizer.h"

namespace dcu::modelkit {

// How a log is read by someone who has debugged launches before: find the
// error the run died of (the terminal error), its type and message, and the
// traceback frames that say where it happened. Everything else (warnings on
// the way, echoed config, INFO lines of other processes) is context.
//
// Pure functions over normalised lines (NormalizeLogLine has removed ANSI
// codes, process prefixes, timestamps and level prefixes), linear in the
// size of the log, with bounded copies: safe on hostile input.

// What raised the error.
enum class ErrorOrigin {
  // "torch.OutOfMemoryError: ..." after a traceback, or alone on a line.
  kPythonException = 0,
  // "terminate called after throwing an instance of 'c10::Error'" + "what():".
  kCppException = 1,
  // Ollama and other Go programs: "panic: ..." + goroutine frames.
  kGoPanic = 2,
  // A native runtime or tool error line: "HIP error: ...", "CUDA error: ...",
  // "LLVM ERROR: ...", "GGML_ASSERT(...)", llama.cpp "error: ..." /
  // "llama_model_load: error loading model: ...", "Fatal Python error: ...".
  kNativeError = 3,
};

// One frame of a traceback: `File "/x/vllm/worker/worker.py", line 229, in
// determine_num_available_blocks`, or a Go frame `main.main()`.
struct TracebackFrame {
  int line = -1;  // index into the normalised lines
  std::string file;
  std::string function;
};

// An error the log reports as raised. A Python record spans its header line
// ("ValueError: ...") and the continuation lines of its message (pydantic's
// "Value error, ..." detail, a multi-line CUDA error).
struct RaisedError {
  ErrorOrigin origin = ErrorOrigin::kPythonException;
  // "torch.OutOfMemoryError", "ValueError", "c10::Error", "panic"; for a
  // native error line, the tool's word for it ("HIP error", "LLVM ERROR",
  // "error").
  std::string type;
  // The message: the rest of the header line and the continuation lines,
  // joined by '\n', at most kMaxMessageBytes.
  std::string message;
  int first_line = -1;  // the header line
  int last_line = -1;   // the last continuation line (== first_line if none)
  // The traceback this error ends (index into LogStructure::tracebacks), -1
  // when the error stands alone.
  int traceback = -1;
  // Matched the caller's follow-on predicate (an exception that only reports
  // an earlier one, e.g. vLLM V1's "Engine core initialization failed. See
  // root cause above"): not chosen as the terminal error while another is.
  bool follow_on = false;
};

struct Traceback {
  int first_line = -1;  // "Traceback (most recent call last):" or the first frame
  int last_line = -1;
  // The last kMaxFramesKept frames, outermost first (innermost last), as
  // Python prints them.
  std::vector<TracebackFrame> frames;
  // Index into LogStructure::errors of the exception that ends the
  // traceback; -1 when the log stops (or moves on) before an exception line.
  int error = -1;
  // Preceded by "The above exception was the direct cause of the following
  // exception" or "During handling of the above exception".
  bool chained = false;
  // Began with a "Traceback (most recent call last)" line, not with a bare
  // frame (an excerpt cut at its start, or another rank's frames resuming
  // after an exception printed in between).
  bool has_header = false;
};

// The part a normalised line plays in the structure.
enum class LineRole {
  kOther = 0,
  kTracebackHeader = 1,
  kFrame = 2,
  kFrameSource = 3,  // the source line under a frame, '^^^^' markers
  kChainMarker = 4,
  kErrorHeader = 5,
  kErrorContinuation = 6,
};

struct LogStructure {
  std::vector<Traceback> tracebacks;  // in log order
  std::vector<RaisedError> errors;    // in log order
  // The error the run died of: the last raised error that is not a
  // follow-on (the last one when all are); -1 when the log has none, or when
  // the log ends inside a later traceback whose error line is missing.
  int terminal_error = -1;
  // The traceback that says where the run died: the terminal error's, or a
  // later traceback the log was cut in (then its `error` is -1). -1 if none.
  int terminal_traceback = -1;
  // When the log ends inside a later traceback whose error line is missing:
  // the raised error before that traceback (what an engineer reads next), or
  // -1.
  int error_before_cut_traceback = -1;
  // When the error line is missing: the lines under the last frame of the
  // terminal traceback (its source line, or an error pasted without one).
  std::vector<int> cut_traceback_tail;
  // One entry per line.
  std::vector<LineRole> roles;
  // One entry per line: the index into `errors` of the record the line is
  // part of (header or continuation), else -1.
  std::vector<int> error_of_line;

  // True when the terminal traceback has frames but no exception line: the
  // log was cut (or the process died) before the error was printed.
  bool ErrorLineMissing() const {
    return terminal_traceback >= 0 && tracebacks[terminal_traceback].error < 0 &&
           !tracebacks[terminal_traceback].frames.empty();
  }
};

inline constexpr size_t kMaxMessageBytes = 4096;
inline constexpr int kMaxContinuationLines = 8;
inline constexpr size_t kMaxFramesKept = 32;

// Says whether a raised error only reports an earlier one.
using FollowOnPredicate = std::function<bool(const RaisedError&)>;

LogStructure ReadLogStructure(const std::vector<NormalizedLine>& lines,
                              const FollowOnPredicate& is_follow_on = {});

// `File "/x/y.py", line 12, in f` (a Python frame line, normalised: leading
// blanks gone). False for anything else.
bool ParsePythonFrame(absl::string_view text, TracebackFrame* frame);

// "pkg.mod.SomeError: message" / "SomeError": the exception type and the
// message. `strict`: the type must end like an exception class (Error,
// Exception, Exit, Interrupt, Fault) as IsExceptionLine requires; otherwise
// (the line right after a traceback's frames) any dotted name whose last
// part starts with a capital letter ("StopIteration", "BackendCompilerFailed").
bool ParsePythonExceptionHeader(absl::string_view text, bool strict, std::string* type,
                                std::string* message);

}  // namespace dcu::modelkit
