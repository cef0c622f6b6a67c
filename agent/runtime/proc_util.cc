#include "agent/runtime/proc_util.h"

#include <dirent.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/fs_util.h"
#include "common/proc_stat.h"

namespace dcu::agent {
namespace {

// Files under /proc/PID with this header's contract: PERMISSION_DENIED for
// another user's process, NOT_FOUND for anything else (the process is gone,
// or went while being read).
absl::StatusOr<std::string> ReadProcFile(const std::string& path) {
  // environ is bounded by the kernel's ARG_MAX (a few MiB at most).
  auto text = common::ReadSmallFile(path, 16 << 20);
  if (text.ok() || text.status().code() == absl::StatusCode::kPermissionDenied) return text;
  return absl::NotFoundError(text.status().message());
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ReadProcEnviron(absl::string_view proc_root,
                                                                   int pid) {
  auto text = ReadProcFile(absl::StrCat(proc_root, "/", pid, "/environ"));
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
  auto text = ReadProcFile(absl::StrCat(proc_root, "/", pid, "/environ"));
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
    auto st = common::ReadProcStat(proc_root, pid);
    if (st.ok() && st->state == 'Z') continue;
    out.push_back(pid);
  }
  closedir(d);
  return out;
}

std::string ReadBootId(absl::string_view proc_root) {
  auto text = ReadProcFile(absl::StrCat(proc_root, "/sys/kernel/random/boot_id"));
  if (!text.ok()) return "";
  return std::string(absl::StripAsciiWhitespace(*text));
}

bool ProcessAlive(absl::string_view proc_root, int pid, uint64_t start_ticks) {
  if (pid <= 0) return false;
  auto st = common::ReadProcStat(proc_root, pid);
  if (!st.ok()) return false;
  if (st->state == 'Z' || st->state == 'X') return false;
  return st->start_ticks == start_ticks;
}

}  // namespace dcu::agent
