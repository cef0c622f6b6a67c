#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

// Small readers of /proc used to identify processes across agent restarts.
// Every function takes the proc root so tests could point it elsewhere.
namespace dcu::agent {

// /proc/PID/stat is parsed by common/proc_stat.h (ReadProcStat).

// Parses the NUL-separated /proc/PID/environ. NOT_FOUND when the process is
// gone, PERMISSION_DENIED when it belongs to another user.
absl::StatusOr<std::map<std::string, std::string>> ReadProcEnviron(absl::string_view proc_root,
                                                                   int pid);

// True when /proc/PID/environ holds exactly `key=value`.
bool EnvironHas(absl::string_view proc_root, int pid, absl::string_view key,
                absl::string_view value);

// Pids whose environment holds `key=value` (zombies excluded: they hold
// nothing and cannot be killed), never including this process.
std::vector<int> FindPidsWithEnv(absl::string_view proc_root, absl::string_view key,
                                 absl::string_view value);

// /proc/sys/kernel/random/boot_id, or "" when unreadable.
std::string ReadBootId(absl::string_view proc_root);

// True when `pid` exists, is not a zombie and started at `start_ticks` (a
// recorded start time of 0 never matches: identity unknown).
bool ProcessAlive(absl::string_view proc_root, int pid, uint64_t start_ticks);

}  // namespace dcu::agent
