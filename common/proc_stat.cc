#include "common/proc_stat.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/fs_util.h"

namespace dcu::common {

absl::StatusOr<ProcStat> ParseProcStat(absl::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == absl::string_view::npos || close == absl::string_view::npos || close < open) {
    return absl::DataLossError("no comm field");
  }
  ProcStat st;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text.substr(0, open)), &st.pid)) {
    return absl::DataLossError("bad pid field");
  }
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  std::vector<absl::string_view> f =
      absl::StrSplit(text.substr(close + 1), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  // f[0] is field 3 (state); field N is f[N - 3].
  if (f.size() < 20) return absl::DataLossError("too few fields");
  st.state = f[0][0];
  if (!absl::SimpleAtoi(f[1], &st.ppid) || !absl::SimpleAtoi(f[2], &st.pgid) ||
      !absl::SimpleAtoi(f[3], &st.sid) || !absl::SimpleAtoi(f[11], &st.utime_ticks) ||
      !absl::SimpleAtoi(f[12], &st.stime_ticks) || !absl::SimpleAtoi(f[19], &st.start_ticks)) {
    return absl::DataLossError("bad numeric field");
  }
  return st;
}

absl::StatusOr<ProcStat> ReadProcStat(absl::string_view proc_root, int pid) {
  std::string path = absl::StrCat(proc_root, "/", pid, "/stat");
  // A stat line is well under 1 KiB (comm is at most 64 bytes).
  auto text = ReadSmallFile(path, 4096);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("no process ", pid));
  auto st = ParseProcStat(*text);
  if (!st.ok()) return absl::DataLossError(absl::StrCat(path, ": ", st.status().message()));
  return st;
}

}  // namespace dcu::common
