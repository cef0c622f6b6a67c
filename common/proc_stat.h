#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::common {

// The fields of /proc/PID/stat (proc(5)) that dcufleet uses: process
// identity across restarts (pid + start time), liveness (state), the parent
// and session, and CPU time (benchmarks).
struct ProcStat {
  int pid = 0;          // field 1
  std::string comm;     // field 2, without the parentheses
  char state = '?';     // field 3: R, S, D, Z, T, X, ...
  int ppid = 0;         // field 4
  int pgid = 0;         // field 5
  int sid = 0;          // field 6
  uint64_t utime_ticks = 0;  // field 14, clock ticks
  uint64_t stime_ticks = 0;  // field 15, clock ticks
  uint64_t start_ticks = 0;  // field 22: start time in clock ticks since boot
};

// Parses the text of /proc/PID/stat. The comm may hold spaces and
// parentheses: it ends at the LAST ')'. DATA_LOSS (naming what is wrong)
// when there is no comm, fewer than 22 fields or a field above is not a
// number.
absl::StatusOr<ProcStat> ParseProcStat(absl::string_view text);

// Reads and parses <proc_root>/<pid>/stat. NOT_FOUND when the process does
// not exist (or its stat cannot be read), DATA_LOSS when it cannot be parsed.
absl::StatusOr<ProcStat> ReadProcStat(absl::string_view proc_root, int pid);

}  // namespace dcu::common
