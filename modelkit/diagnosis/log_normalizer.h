#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace dcu::modelkit {

// How a log line presents itself: from its level prefix ("ERROR 10-25 ...",
// "[W409 ...]", "INFO:", "[Error]") or, without one, from its content
// ("ValueError: ...", "LLVM ERROR", "UserWarning").
enum class LineSeverity { kUnknown = 0, kDebugInfo = 1, kWarning = 2, kError = 3 };

struct NormalizedLine {
  // The message with ANSI codes, interleaved worker prefixes, timestamps,
  // level prefixes, leading blanks and the Ray "[repeated Nx across
  // cluster]" suffix removed.
  std::string text;
  LineSeverity severity = LineSeverity::kUnknown;
  // The line is a Python exception line ("ValueError: ...",
  // "torch.OutOfMemoryError: ...") or a native fatal error ("LLVM ERROR:").
  bool exception = false;
  // `severity` came from a level prefix ("INFO 04-27 ...", "[W409 ...]",
  // "level=INFO") rather than from the content. The traceback reader skips
  // such INFO/WARNING lines when another process interleaves them.
  bool level_from_prefix = false;
  // The level prefix was glog's/c10's fatal one ("F1204 12:34:56.789 12 x.cc:1] ",
  // "[F1204 ...]"): LOG(FATAL) aborts the process after this line.
  bool fatal_prefix = false;
};

// Removes ANSI escape sequences (CSI, OSC, two-byte escapes) and turns other
// control characters except tab into spaces (a '\r' of a progress bar).
std::string StripAnsi(absl::string_view line);

// Removes caret-notation ANSI codes ("^[[1;36m", the text a tool shows for
// ESC [ 1;36m) and a trailing "^M" (a CRLF line end's '\r'); other '^'
// characters (traceback markers "^^^^") are kept.
std::string StripCaretNotation(absl::string_view line);

// Normalises one raw log line. Handles, repeatedly and in any order:
//   "(EngineCore_DP0 pid=123) ", "(VllmWorkerProcess pid=1) ",
//   "(RayWorkerWrapper pid=880, ip=10.0.0.1) ", "(Process) ",
//   "[rank0]: ", "[vllm]: ", "[Stage-0] ", "[2025-03-10 14:17:52 TP6] ",
//   "[2026-02-24T20:21:58Z] ", "[W409 11:42:27.7 ProcessGroupNCCL.cpp:1250] ",
//   "F1204 12:34:56.789012  4242 model.cc:88] " (glog without brackets),
//   "[multiproc_executor.py:492] ", "[Error] ", "vllm-1  | " (compose),
//   "2024-04-27 10:13:05 | ERROR | stderr | ", "2025-12-11 10:34:03+08:00 - x - INFO - ",
//   "ERROR 10-25 13:08:43 [core.py:708] ", "INFO 04-27 10:11:03 llm_engine.py:70] ",
//   "INFO:     ", "ERROR (uvicorn.error):  ",
//   "Aug  2 20:05:50 host ollama[447]: " (syslog / journald),
//   "time=2026-02-02T12:29:02.735Z level=INFO source=server.go:1339 msg=" (Go slog),
//   "  | " (buildkite).
// A progress bar redrawn with '\r' keeps only what the terminal shows last:
// the text after the last '\r' that is followed by anything.
// Never fails: unknown shapes are left as they are.
NormalizedLine NormalizeLogLine(absl::string_view raw_line);

// Whether `text` (already normalised) starts like a Python exception line
// "pkg.mod.SomeError: ..." / "SomeException" or a native fatal error.
bool IsExceptionLine(absl::string_view text);

}  // namespace dcu::modelkit
