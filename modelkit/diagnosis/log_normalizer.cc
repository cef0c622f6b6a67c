#include "modelkit/diagnosis/log_normalizer.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "common/redraw.h"

namespace dcu::modelkit {
namespace {

// Hand-written scanners rather than regexes: normalisation runs on every line
// of a 10,000-line tail and must stay well below a microsecond per line.

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsWordChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}

void SkipBlanks(absl::string_view& s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  s.remove_prefix(i);
}

// Reads exactly `n` digits at `pos`.
bool Digits(absl::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return false;
  for (size_t i = 0; i < n; ++i) {
    if (!IsDigit(s[pos + i])) return false;
  }
  return true;
}

LineSeverity LevelFromWord(absl::string_view w) {
  if (w == "ERROR" || w == "Error" || w == "error" || w == "CRITICAL" ||
      w == "FATAL" || w == "Fatal" || w == "E" || w == "F") {
    return LineSeverity::kError;
  }
  if (w == "WARNING" || w == "WARN" || w == "Warning" || w == "warning" || w == "W") {
    return LineSeverity::kWarning;
  }
  if (w == "INFO" || w == "Info" || w == "DEBUG" || w == "Debug" || w == "I" ||
      w == "D" || w == "TRACE") {
    return LineSeverity::kDebugInfo;
  }
  return LineSeverity::kUnknown;
}

// "2024-04-27 10:13:05", "2026-02-24T20:21:58Z", "2026-05-08 11:47:02.257",
// "2025-12-11 10:34:03.939481+08:00", "2026-02-02 18:12:48,886". Returns the
// length consumed, 0 when `s` does not start with a timestamp.
size_t TimestampLength(absl::string_view s) {
  if (!(Digits(s, 0, 4) && s.size() >= 19 && s[4] == '-' && Digits(s, 5, 2) &&
        s[7] == '-' && Digits(s, 8, 2) && (s[10] == ' ' || s[10] == 'T') &&
        Digits(s, 11, 2) && s[13] == ':' && Digits(s, 14, 2) && s[16] == ':' &&
        Digits(s, 17, 2))) {
    return 0;
  }
  size_t i = 19;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-') && Digits(s, i + 1, 2)) {
    i += 3;
    if (i < s.size() && s[i] == ':') ++i;
    if (Digits(s, i, 2)) i += 2;
  }
  return i;
}

// vLLM: "ERROR 10-25 13:08:43 [core.py:708] " or "INFO 04-27 10:11:03 llm_engine.py:70] ".
bool StripVllmLevelPrefix(absl::string_view& s, LineSeverity& severity) {
  size_t sp = s.find(' ');
  if (sp == absl::string_view::npos || sp < 4 || sp > 8) return false;
  LineSeverity level = LevelFromWord(s.substr(0, sp));
  if (level == LineSeverity::kUnknown) return false;
  size_t i = sp + 1;
  // MM-DD HH:MM:SS[.fff]
  if (!(Digits(s, i, 2) && i + 14 <= s.size() && s[i + 2] == '-' && Digits(s, i + 3, 2) &&
        s[i + 5] == ' ' && Digits(s, i + 6, 2) && s[i + 8] == ':' && Digits(s, i + 9, 2) &&
        s[i + 11] == ':' && Digits(s, i + 12, 2))) {
    return false;
  }
  i += 14;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == ' ') ++i;
  // Optional "[file.py:123] " or "file.py:123] ".
  size_t close = s.find(']', i);
  if (close != absl::string_view::npos && close - i < 80) {
    absl::string_view loc = s.substr(i, close - i);
    if (!loc.empty() && loc[0] == '[') loc.remove_prefix(1);
    size_t colon = loc.rfind(':');
    if (colon != absl::string_view::npos && colon + 1 < loc.size() &&
        loc.find(' ') == absl::string_view::npos) {
      bool digits = true;
      for (size_t k = colon + 1; k < loc.size(); ++k) digits &= IsDigit(loc[k]);
      if (digits) i = close + 1;
    }
  }
  s.remove_prefix(i);
  severity = level;
  return true;
}

// One bracketed prefix "[...]" (with an optional ':' after it).
bool StripBracketPrefix(absl::string_view& s, LineSeverity& severity, bool& fatal) {
  if (s.empty() || s[0] != '[') return false;
  size_t close = s.find(']');
  if (close == absl::string_view::npos || close > 96 || close < 2) return false;
  absl::string_view in = s.substr(1, close - 1);
  bool colon_after = close + 1 < s.size() && s[close + 1] == ':';
  bool strip = false;
  if (absl::StartsWith(in, "rank") && in.size() > 4 && IsDigit(in[4])) {
    strip = true;  // [rank0]:
  } else if (IsDigit(in[0]) && TimestampLength(in) > 0) {
    strip = true;  // [2025-03-10 14:17:52 TP6], [2026-02-24T20:21:58Z]
  } else if ((in[0] == 'W' || in[0] == 'E' || in[0] == 'I' || in[0] == 'F') &&
             in.size() > 5 && Digits(in, 1, 3) &&
             (in[4] == ' ' || (IsDigit(in[4]) && in[5] == ' '))) {
    // c10/glog: [W409 11:42:27.776885251 ProcessGroupNCCL.cpp:1250]
    severity = LevelFromWord(in.substr(0, 1));
    fatal = in[0] == 'F';
    strip = true;
  } else if (LevelFromWord(in) != LineSeverity::kUnknown) {
    severity = LevelFromWord(in);  // [Error], [WARNING]
    strip = true;
  } else if (absl::StartsWith(in, "Stage-")) {
    strip = true;
  } else if (in.find(' ') == absl::string_view::npos) {
    size_t colon = in.rfind(':');
    bool file_line = colon != absl::string_view::npos && colon + 1 < in.size();
    for (size_t k = colon + 1; file_line && k < in.size(); ++k) file_line &= IsDigit(in[k]);
    // [multiproc_executor.py:492] or a tag such as [vllm]: / [QUARK-INFO]:
    if (file_line || colon_after) strip = true;
  }
  if (!strip) return false;
  s.remove_prefix(close + 1 + (colon_after ? 1 : 0));
  return true;
}

// glog without brackets: "F1204 12:34:56.789012  4242 model.cc:88] " (level
// letter, MMDD, time, thread id, file:line, "] ").
bool StripGlogPrefix(absl::string_view& s, LineSeverity& severity, bool& fatal) {
  if (s.size() < 24 || !(s[0] == 'I' || s[0] == 'W' || s[0] == 'E' || s[0] == 'F')) return false;
  if (!(Digits(s, 1, 4) && s[5] == ' ' && Digits(s, 6, 2) && s[8] == ':' && Digits(s, 9, 2) &&
        s[11] == ':' && Digits(s, 12, 2))) {
    return false;
  }
  size_t close = s.find("] ", 14);
  if (close == absl::string_view::npos || close > 120) return false;
  absl::string_view loc = s.substr(14, close - 14);
  size_t colon = loc.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 >= loc.size()) return false;
  for (size_t k = colon + 1; k < loc.size(); ++k) {
    if (!IsDigit(loc[k])) return false;
  }
  severity = LevelFromWord(s.substr(0, 1));
  fatal = s[0] == 'F';
  s.remove_prefix(close + 2);
  return true;
}

// "(EngineCore_DP0 pid=123) ", "(RayWorkerWrapper pid=206994, ip=...) ", "(Process) ".
bool StripParenPrefix(absl::string_view& s) {
  if (s.empty() || s[0] != '(') return false;
  size_t close = s.find(')');
  if (close == absl::string_view::npos || close > 120) return false;
  absl::string_view in = s.substr(1, close - 1);
  if (in.find("pid=") == absl::string_view::npos && in != "Process") return false;
  s.remove_prefix(close + 1);
  return true;
}

// docker compose: "vllm-1  | ".
bool StripComposePrefix(absl::string_view& s) {
  size_t i = 0;
  while (i < s.size() && (IsWordChar(s[i]) || s[i] == '-' || s[i] == '.')) ++i;
  if (i == 0 || i > 64) return false;
  size_t j = i;
  while (j < s.size() && s[j] == ' ') ++j;
  if (j == i || j >= s.size() || s[j] != '|') return false;
  if (j + 1 < s.size() && s[j + 1] != ' ') return false;
  s.remove_prefix(j + 1);
  return true;
}

// After a timestamp: "| ERROR | stderr | " or "- gpustack.worker - INFO - ".
void StripSeparatedFields(absl::string_view& s, LineSeverity& severity) {
  for (char sep : {'|', '-'}) {
    if (s.size() < 3 || s[0] != sep || s[1] != ' ') continue;
    absl::string_view rest = s.substr(2);
    std::string delim = std::string(" ") + sep + " ";
    for (int field = 0; field < 3; ++field) {
      size_t end = rest.find(delim);
      if (end == absl::string_view::npos || end > 64) break;
      absl::string_view word = rest.substr(0, end);
      if (word.find(' ') != absl::string_view::npos) break;
      LineSeverity level = LevelFromWord(word);
      if (level != LineSeverity::kUnknown) severity = level;
      rest.remove_prefix(end + delim.size());
      s = rest;
    }
    return;
  }
}

// mudler/LocalAI pkg/model/process.go: a backend process's output, relayed
// line by line through zerolog's console writer (time.Kitchen and a
// three-letter level): "12:31PM DBG GRPC(<model>-127.0.0.1:46589): stderr
// <the backend's line>" (also "stdout"). The time and level go here; the
// GRPC(...) relay prefix in StripLocalAiRelayPrefix.
bool StripZerologConsolePrefix(absl::string_view& s, LineSeverity& severity) {
  size_t i = 0;
  while (i < s.size() && i < 2 && IsDigit(s[i])) ++i;
  if (i == 0 || i + 7 > s.size() || s[i] != ':' || !IsDigit(s[i + 1]) || !IsDigit(s[i + 2])) {
    return false;
  }
  absl::string_view ampm = s.substr(i + 3, 2);
  if ((ampm != "AM" && ampm != "PM") || s[i + 5] != ' ') return false;
  absl::string_view rest = s.substr(i + 6);
  static constexpr absl::string_view kLevels[] = {"TRC ", "DBG ", "INF ", "WRN ", "ERR ", "FTL ", "PNC "};
  for (absl::string_view level : kLevels) {
    if (absl::StartsWith(rest, level)) {
      if (level == "WRN ") {
        severity = LineSeverity::kWarning;
      } else if (level == "ERR " || level == "FTL " || level == "PNC ") {
        severity = LineSeverity::kError;
      } else {
        severity = LineSeverity::kDebugInfo;
      }
      s = rest.substr(level.size());
      return true;
    }
  }
  return false;
}

bool StripLocalAiRelayPrefix(absl::string_view& s, LineSeverity& severity) {
  if (!absl::StartsWith(s, "GRPC(")) return false;
  for (absl::string_view stream : {absl::string_view("): stderr"), absl::string_view("): stdout")}) {
    size_t at = s.find(stream);
    if (at == absl::string_view::npos || at > 512) continue;
    size_t end = at + stream.size();
    if (end < s.size() && s[end] != ' ') continue;
    s.remove_prefix(end < s.size() ? end + 1 : end);
    // The relayed line's own level (if any) is read from its text.
    severity = LineSeverity::kUnknown;
    return true;
  }
  return false;
}

// uvicorn: "INFO:     ...", "ERROR:    ...", "ERROR (uvicorn.error):  ...".
bool StripUvicornLevel(absl::string_view& s, LineSeverity& severity) {
  size_t i = 0;
  while (i < s.size() && absl::ascii_isupper(static_cast<unsigned char>(s[i]))) ++i;
  if (i < 4 || i > 8) return false;
  LineSeverity level = LevelFromWord(s.substr(0, i));
  if (level == LineSeverity::kUnknown) return false;
  size_t j = i;
  if (j < s.size() && s[j] == ':') {
    ++j;
  } else if (j + 1 < s.size() && s[j] == ' ' && s[j + 1] == '(') {
    size_t close = s.find("):", j);
    if (close == absl::string_view::npos || close > j + 64) return false;
    j = close + 2;
  } else {
    return false;
  }
  if (j >= s.size() || s[j] != ' ') return false;
  s.remove_prefix(j);
  severity = level;
  return true;
}

// syslog / journald: "Aug  2 20:05:50 ollama-ubuntu-jammy-2 ollama[447]: ".
bool StripSyslogPrefix(absl::string_view& s) {
  static constexpr absl::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (s.size() < 16 || s[3] != ' ') return false;
  bool month = false;
  for (size_t m = 0; m + 3 <= kMonths.size(); m += 3) month |= s.substr(0, 3) == kMonths.substr(m, 3);
  if (!month) return false;
  size_t i = 4;
  if (s[i] == ' ') ++i;  // "Aug  2": a day of one digit is padded
  size_t day = i;
  while (i < s.size() && IsDigit(s[i]) && i - day < 2) ++i;
  if (i == day || i >= s.size() || s[i] != ' ') return false;
  ++i;
  if (!(Digits(s, i, 2) && i + 8 < s.size() && s[i + 2] == ':' && Digits(s, i + 3, 2) &&
        s[i + 5] == ':' && Digits(s, i + 6, 2) && s[i + 8] == ' ')) {
    return false;
  }
  i += 9;
  // Host, then the tag ("ollama[447]:" or "kernel:").
  size_t host_end = s.find(' ', i);
  if (host_end == absl::string_view::npos || host_end - i > 64) return false;
  size_t tag_end = s.find(": ", host_end + 1);
  if (tag_end == absl::string_view::npos || tag_end - host_end > 64) return false;
  absl::string_view tag = s.substr(host_end + 1, tag_end - host_end - 1);
  if (tag.empty() || tag.find(' ') != absl::string_view::npos) return false;
  s.remove_prefix(tag_end + 2);
  return true;
}

// Go's log/slog text handler (Ollama): "time=... level=ERROR source=sched.go:1
// msg=\"error loading llama server\" error=\"...\"". Keeps the message and the
// fields after it (Ollama puts the cause in error=...).
bool StripSlogPrefix(absl::string_view& s, LineSeverity& severity) {
  if (!absl::StartsWith(s, "time=")) return false;
  size_t level = s.find(" level=");
  if (level == absl::string_view::npos || level > 64) return false;
  size_t word_start = level + 7;
  size_t word_end = s.find(' ', word_start);
  if (word_end == absl::string_view::npos) word_end = s.size();
  LineSeverity parsed = LevelFromWord(s.substr(word_start, word_end - word_start));
  if (parsed == LineSeverity::kUnknown) return false;
  severity = parsed;
  absl::string_view rest = s.substr(std::min(word_end + 1, s.size()));
  if (absl::StartsWith(rest, "source=")) {
    size_t sp = rest.find(' ');
    rest = sp == absl::string_view::npos ? absl::string_view() : rest.substr(sp + 1);
  }
  if (absl::StartsWith(rest, "msg=")) rest.remove_prefix(4);
  s = rest;
  return true;
}

void StripRepeatedSuffix(absl::string_view& s) {
  // Ray: "... [repeated 6x across cluster]".
  if (!absl::EndsWith(s, " across cluster]")) return;
  size_t open = s.rfind(" [repeated ");
  if (open != absl::string_view::npos) s = s.substr(0, open);
}

LineSeverity SeverityFromContent(absl::string_view text, bool exception) {
  if (exception) {
    // "UserWarning: ..." is an exception-shaped warning.
    size_t colon = text.find(':');
    absl::string_view head = text.substr(0, colon);
    return absl::EndsWith(head, "Warning") ? LineSeverity::kWarning : LineSeverity::kError;
  }
  if (absl::StrContains(text, "Warning") || absl::StrContains(text, "WARNING") ||
      absl::StrContains(text, "warnings.warn")) {
    return LineSeverity::kWarning;
  }
  if (absl::StrContains(text, "ERROR") || absl::StrContains(text, "Error:") ||
      absl::StrContains(text, "error:") || absl::StartsWith(text, "Aborted") ||
      absl::StrContains(text, "fault")) {
    return LineSeverity::kError;
  }
  return LineSeverity::kUnknown;
}

}  // namespace

std::string StripAnsi(absl::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == 0x1b) {
      if (i + 1 >= line.size()) break;
      char kind = line[i + 1];
      if (kind == '[') {  // CSI: params 0x30-0x3f, intermediates 0x20-0x2f, final 0x40-0x7e
        size_t j = i + 2;
        while (j < line.size() && line[j] >= 0x20 && line[j] <= 0x3f) ++j;
        if (j < line.size() && line[j] >= 0x40 && line[j] <= 0x7e) ++j;
        i = j - 1;
      } else if (kind == ']') {  // OSC: until BEL or ESC backslash
        size_t j = i + 2;
        while (j < line.size() && line[j] != 0x07 &&
               !(line[j] == 0x1b && j + 1 < line.size() && line[j + 1] == '\\')) {
          ++j;
        }
        if (j < line.size()) j += (line[j] == 0x07) ? 1 : 2;
        i = j - 1;
      } else {
        i += 1;  // two-byte escape such as ESC c
      }
      continue;
    }
    if (c < 0x20 && c != '\t') {
      out.push_back(' ');
      continue;
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

std::string StripCaretNotation(absl::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '^' && i + 2 < line.size() && line[i + 1] == '[' && line[i + 2] == '[') {
      // "^[[0;36m": ESC [ digits/';' and a final letter (SGR, cursor moves).
      size_t j = i + 3;
      while (j < line.size() && ((line[j] >= '0' && line[j] <= '9') || line[j] == ';')) ++j;
      if (j < line.size() && absl::ascii_isalpha(static_cast<unsigned char>(line[j]))) {
        i = j;
        continue;
      }
    }
    out.push_back(line[i]);
  }
  // A trailing "^M" is the '\r' of a CRLF line end.
  if (absl::EndsWith(out, "^M")) out.resize(out.size() - 2);
  return out;
}

bool IsExceptionLine(absl::string_view text) {
  if (absl::StartsWith(text, "LLVM ERROR") || absl::StartsWith(text, "terminate called") ||
      absl::StartsWith(text, "GGML_ASSERT") || absl::StartsWith(text, "Fatal Python error")) {
    return true;
  }
  // "pkg.mod.NameError: msg" / "NameError" / "raise NameError(" is not one.
  size_t i = 0;
  while (i < text.size() && (IsWordChar(text[i]) || text[i] == '.')) ++i;
  if (i < 5 || i > 120) return false;
  absl::string_view name = text.substr(0, i);
  // A bare "Error:" / "Warning:" is a level word, not an exception type.
  if (name == "Error" || name == "Warning" || name == "Exception") return false;
  if (!(absl::EndsWith(name, "Error") || absl::EndsWith(name, "Exception") ||
        absl::EndsWith(name, "Exit") || absl::EndsWith(name, "Interrupt") ||
        absl::EndsWith(name, "Warning") || absl::EndsWith(name, "Fault"))) {
    return false;
  }
  return i == text.size() || text[i] == ':';
}

// xorbitsai/xoscar xoscar/backends/message.pyx (_AsCauseBase.__str__): an
// error raised in an actor (Xinference's model workers) reaches the caller
// with "[address=<host:port>, pid=<n>] " in front of its message, once per
// actor it crossed ("ValueError: [address=0.0.0.0:37239, pid=310] Model
// architectures ['X'] are not supported"). The message is the engine's:
// the prefix goes, so that templates anchored on "<Type>: <message>" read
// it as they read the engine's own line.
static void StripXoscarCausePrefix(std::string& text) {
  static constexpr absl::string_view kOpen = ": [address=";
  size_t colon = absl::string_view(text).find(kOpen);
  if (colon == std::string::npos) return;
  // Only right after the exception type (a dotted name without blanks).
  for (size_t i = 0; i < colon; ++i) {
    if (text[i] == ' ' || text[i] == '\t') return;
  }
  size_t start = colon + 2;
  size_t end = start;
  while (absl::StartsWith(absl::string_view(text).substr(end), kOpen.substr(2))) {
    size_t pid = text.find(", pid=", end);
    if (pid == std::string::npos) break;
    size_t close = pid + 6;
    while (close < text.size() && IsDigit(text[close])) ++close;
    if (close == pid + 6 || close >= text.size() || text[close] != ']') break;
    // No blank inside the address.
    if (absl::string_view(text).substr(end, pid - end).find(' ') != absl::string_view::npos) break;
    end = close + 1;
    while (end < text.size() && text[end] == ' ') ++end;
  }
  if (end > start) text.erase(start, end - start);
}

NormalizedLine NormalizeLogLine(absl::string_view raw_line) {
  NormalizedLine result;
  std::string stripped;
  bool needs_copy = false;
  for (char c : raw_line) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      needs_copy = true;
      break;
    }
  }
  // Only a line with control characters can hold a '\r' redraw.
  if (needs_copy && raw_line.find('\r') != absl::string_view::npos) {
    raw_line = common::LastRedraw(raw_line);
  }
  absl::string_view s = raw_line;
  if (needs_copy) {
    stripped = StripAnsi(raw_line);
    s = stripped;
  }
  // Caret notation ("^[[0;36m", a trailing "^M"): the same codes, as a
  // terminal capture pasted through a tool that shows control characters.
  std::string uncareted;
  if (absl::StrContains(s, "^[[") || absl::EndsWith(s, "^M")) {
    uncareted = StripCaretNotation(s);
    s = uncareted;
  }
  LineSeverity severity = LineSeverity::kUnknown;
  bool fatal = false;
  for (int round = 0; round < 10; ++round) {
    SkipBlanks(s);
    if (s.empty()) break;
    char c = s[0];
    if (c == '(' && StripParenPrefix(s)) continue;
    if (c == '[' && StripBracketPrefix(s, severity, fatal)) continue;
    if (IsDigit(c) && StripZerologConsolePrefix(s, severity)) continue;
    if (c == 'G' && StripLocalAiRelayPrefix(s, severity)) continue;
    if (IsDigit(c)) {
      size_t ts = TimestampLength(s);
      if (ts > 0 && ts < s.size() && s[ts] == ' ') {
        s.remove_prefix(ts + 1);
        StripSeparatedFields(s, severity);
        continue;
      }
    }
    if (absl::ascii_isupper(static_cast<unsigned char>(c)) &&
        (StripVllmLevelPrefix(s, severity) || StripUvicornLevel(s, severity) ||
         StripGlogPrefix(s, severity, fatal))) {
      continue;
    }
    if (c == 't' && StripSlogPrefix(s, severity)) continue;
    if (c == '|' && s.size() > 1 && s[1] == ' ') {  // buildkite "  | "
      s.remove_prefix(2);
      continue;
    }
    if (round == 0 && absl::ascii_isupper(static_cast<unsigned char>(c)) && StripSyslogPrefix(s)) {
      continue;
    }
    if (round == 0 && StripComposePrefix(s)) continue;
    break;
  }
  StripRepeatedSuffix(s);
  // Trailing blanks carry no meaning and defeat "$" anchors.
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  result.text = std::string(s);
  result.exception = IsExceptionLine(result.text);
  if (result.exception) StripXoscarCausePrefix(result.text);
  result.level_from_prefix = severity != LineSeverity::kUnknown;
  result.fatal_prefix = fatal;
  result.severity = severity != LineSeverity::kUnknown
                        ? severity
                        : SeverityFromContent(result.text, result.exception);
  // An exception line under an INFO prefix is still the error.
  if (result.exception && result.severity == LineSeverity::kDebugInfo) {
    result.severity = SeverityFromContent(result.text, true);
  }
  return result;
}

}  // namespace dcu::modelkit
