#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// Every process the agent launches carries this variable in its environment
// (value: the instance id), so children that outlive their parent (vLLM's
// tensor-parallel workers do) are still recognised. The runtime must set it.
inline constexpr char kInstanceMarkerEnv[] = "DCUFLEET_INSTANCE";

// Where to look.
//
// Paths and fixture trees. `root` is a whole filesystem root ("/" on a real
// host): device files are <root>/dev/kfd, <root>/dev/dri/renderD*, and KFD's
// per-process VRAM is <root>/sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>.
// `proc_root` is where processes are listed (default <root>/proc).
//
// An fd's link target (readlink of /proc/PID/fd/N) is a path in the mount
// namespace of whoever made it. It is mapped to a device path "seen from the
// root" like this:
//  1. a target under <root>/ has the root stripped: a real child process in
//     a test that opened "/tmp/x/root/dev/kfd" holds "/dev/kfd" when the root
//     is /tmp/x/root;
//  2. otherwise, when the root is "/" or proc_root lies inside the root (a
//     recorded /proc, e.g. the benchmark's synthetic tree whose links point
//     at "/dev/kfd"), the target is taken as it is;
//  3. otherwise (a live /proc with a fixture root) the target names a file
//     outside the fixture and is ignored, so a test never counts the host's
//     own GPU users.
// Only /dev/kfd, /dev/dri/renderD<minor> and /dev/nvidia* count. Threads'
// private fd tables (/proc/PID/task/TID/fd) are not read: all threads of a
// process share one table in practice (CLONE_FILES).
//
// Cost. Reading every process's fd table is ~1-2 us per fd (readlink): 2,000
// processes with 8 fds each cost ~30 ms of CPU here, too much for every
// heartbeat. KFD itself lists every process that has /dev/kfd open
// (sys/class/kfd/kfd/proc/<pid>, created when the process opens it), so the
// periodic scan can read only those processes' fds (kKfdProcesses). What it
// misses are processes that hold a render node without /dev/kfd (display or
// video users, which hold no compute memory); the full scan (kAll) finds
// them and is what `dcu-agent inventory` and a reap use.
enum class FdScan {
  kAll,           // every process in proc_root
  kKfdProcesses,  // only pids listed by KFD; falls back to kAll without KFD
};

struct ProcScanOptions {
  std::string root = "/";
  std::string proc_root;  // empty = <root>/proc
  FdScan fd_scan = FdScan::kAll;
  // Pids a vendor library says use a device (NVML's process lists): read
  // and classified even when no device file of theirs is visible (a
  // process in another mount namespace). One that is not in proc_root gets
  // state "-" (alive as far as the driver knows, invisible here: another
  // PID namespace) instead of "?".
  std::vector<int> extra_pids;
  // Pids never reported (the agent itself: NVML opens /dev/nvidiactl and
  // /dev/nvidia<N> in the agent's own process).
  std::vector<int> exclude_pids;
};

// A process that holds a device, before attribution to devices.
struct ScannedProcess {
  // pid, ppid, comm, cmdline, state, class, instance_id, start time,
  // parent_alive, parent_cmdline, device_paths, class_reason. vram_bytes -1.
  dcufleet::v1::ProcessHolder holder;
  bool holds_kfd = false;
  std::vector<int> render_minors;
  // N of each /dev/nvidia<N> held (not nvidiactl / nvidia-uvm).
  std::vector<int> nvidia_minors;
  // KFD gpu_id -> bytes, from kfd/proc/<pid>/vram_<gpu_id>.
  std::vector<std::pair<uint32_t, int64_t>> kfd_vram;
};

struct ProcScanResult {
  std::vector<ScannedProcess> processes;  // holders only, by pid
  std::vector<dcufleet::v1::Finding> findings;
  int processes_scanned = 0;
  // Whether every process's fd table was read (see FdScan).
  bool full_fd_scan = true;
};

// Classifies one holder. `reason` gets a human explanation.
dcufleet::v1::HolderClass ClassifyHolder(absl::string_view state, absl::string_view instance_id,
                                         const absl::flat_hash_set<std::string>& live_instance_ids,
                                         std::string* reason);

// Scans proc_root/*/fd and the KFD proc tree. Classifies each holder given
// the ids of instances that are running now (managed / leftover /
// unmanaged / zombie). NOT_FOUND / PERMISSION_DENIED when proc_root cannot
// be listed;
// unreadable single processes (EACCES on another user's fd dir) become a
// "proc_unreadable" finding counting them.
absl::StatusOr<ProcScanResult> ScanDeviceHolders(const ProcScanOptions& options,
                                                 const absl::flat_hash_set<std::string>& live_instance_ids);

// Attributes holders to devices: by render minor (Device.drm_render_minor),
// by KFD gpu_id (Device.kfd_gpu_id, with VRAM bytes), by /dev/nvidia<minor>
// (Device.nvidia_minor) and by the vendor's process list
// (Device.vendor_processes, with VRAM bytes). When a device has a complete
// vendor list (vendor_processes_source set), a holder of its device file
// that the list does not name has no memory on it (0, not unknown): NVML
// lists every process with a context. Sets each device's holders and
// holders_vram (live, non-zombie holders with known VRAM). Holders that
// match no device go to `unattributed`.
void AttachHolders(const ProcScanResult& scan, std::vector<dcufleet::v1::Device>* devices,
                   std::vector<dcufleet::v1::ProcessHolder>* unattributed);

}  // namespace dcu::agent
