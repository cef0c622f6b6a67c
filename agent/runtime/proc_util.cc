#include "agent/runtime/proc_util.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dcu::agent {
namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int e = errno;
    if (e == EACCES || e == EPERM) {
      return absl::PermissionDeniedError(absl::StrCat("cannot read '", path, "'"));
    }
    return absl::NotFoundError(absl::StrCat("cannot read '", path, "': ", strerror(e)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<ProcStat> ReadProcStat(absl::string_view proc_root, int pid) {
  std::string path = absl::StrCat(proc_root, "/", pid, "/stat");
  auto text = ReadWhole(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("no process ", pid));
  // comm may hold spaces and parentheses: it ends at the LAST ')'.
  size_t open = text->find('(');
  size_t close = text->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return absl::DataLossError(absl::StrCat(path, ": no comm field"));
  }
  ProcStat st;
  st.pid = pid;
  st.comm = text->substr(open + 1, close - open - 1);
  std::vector<std::string> f =
      absl::StrSplit(absl::string_view(*text).substr(close + 1), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state); field N is f[N - 3].
  if (f.size() < 20) return absl::DataLossError(absl::StrCat(path, ": too few fields"));
  st.state = f[0].empty() ? '?' : f[0][0];
  if (!absl::SimpleAtoi(f[1], &st.ppid) || !absl::SimpleAtoi(f[2], &st.pgid) ||
      !absl::SimpleAtoi(f[3], &st.sid) || !absl::SimpleAtoi(f[19], &st.start_ticks)) {
    return absl::DataLossError(absl::StrCat(path, ": bad numeric field"));
  }
  return st;
}

absl::StatusOr<std::map<std::string, std::string>> ReadProcEnviron(absl::string_view proc_root,
                                                                   int pid) {
  auto text = ReadWhole(absl::StrCat(proc_root, "/", pid, "/environ"));
  if (!text.ok()) return text.status();
  std::map<std::string, std::string> env;
  for (absl::string_view kv : absl::StrSplit(*text, '\0', absl::SkipEmpty())) {
    size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

bool EnvironHas(absl::string_view proc_root, int pid, absl::string_view key,
                absl::string_view value) {
  auto text = ReadWhole(absl::StrCat(proc_root, "/", pid, "/environ"));
  if (!text.ok()) return false;
  std::string want = absl::StrCat(key, "=", value);
  for (absl::string_view kv : absl::StrSplit(*text, '\0', absl::SkipEmpty())) {
    if (kv == want) return true;
  }
  return false;
}

std::vector<int> FindPidsWithEnv(absl::string_view proc_root, absl::string_view key,
                                 absl::string_view value) {
  std::vector<int> out;
  std::string root(proc_root);
  DIR* d = opendir(root.c_str());
  if (d == nullptr) return out;
  int self = getpid();
  while (dirent* e = readdir(d)) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid) || pid <= 1 || pid == self) continue;
    if (!EnvironHas(proc_root, pid, key, value)) continue;
    auto st = ReadProcStat(proc_root, pid);
    if (st.ok() && st->state == 'Z') continue;
    out.push_back(pid);
  }
  closedir(d);
  return out;
}

std::string ReadBootId(absl::string_view proc_root) {
  auto text = ReadWhole(absl::StrCat(proc_root, "/sys/kernel/random/boot_id"));
  if (!text.ok()) return "";
  return std::string(absl::StripAsciiWhitespace(*text));
}

bool ProcessAlive(absl::string_view proc_root, int pid, uint64_t start_ticks) {
  if (pid <= 0) return false;
  auto st = ReadProcStat(proc_root, pid);
  if (!st.ok()) return false;
  if (st->state == 'Z' || st->state == 'X') return false;
  return st->start_ticks == start_ticks;
}

}  // namespace dcu::agent
