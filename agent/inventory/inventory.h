#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/probe/device_probe.h"
#include "agent/probe/probe_registry.h"
#include "common/units.h"
#include "dcufleet/v1/node_truth.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

struct InventoryOptions {
  // Filesystem root: "/" on a host, a fixture tree in tests. Devices are
  // read from <root>/sys, device files are <root>/dev, processes from
  // proc_root (default <root>/proc; see ProcScanOptions for link targets).
  std::string root = "/";
  std::string proc_root;
  // Backends in order (--device_probe); see DeviceProbeRegistry.
  std::vector<std::string> probes = {"sysfs_kfd", "rocm_smi", "hip"};
  // Instances running now; a marked holder of any other id is a leftover.
  absl::flat_hash_set<std::string> live_instance_ids;
  // HIP device view helper.
  std::string memprobe_path;  // default: dcu-memprobe next to this binary
  std::string hip_library;    // default: the loader's libamdhip64.so
  std::string nvml_library;   // default: the loader's libnvidia-ml.so.1
  std::string cuda_library;   // default: the loader's libcuda.so.1
  absl::Duration memprobe_timeout = absl::Seconds(20);
  absl::Duration memprobe_ttl = absl::Seconds(30);
  // rocm-smi search dirs (host paths, under root); empty = defaults.
  std::vector<std::string> rocm_smi_dirs;
  bool scan_processes = true;
  // Periodic Collect() reads only the fds of processes KFD lists (cheap);
  // every `full_scan_every`-th call (and CollectFull) reads every process's
  // fds (1: always; 0: never, only CollectFull). See FdScan in agent/procscan/proc_scanner.h.
  int full_scan_every = 30;
  int64_t unreclaimed_tolerance_bytes = common::kUnreclaimedToleranceBytes;
  // Inside a batch job (agent/inventory/slurm_allocation.h): only the
  // devices whose index the job was given are reported, and the report
  // carries the allocation. Absent: every device on the node.
  std::optional<dcufleet::v1::NodeAllocation> allocation;
  // Test seams; defaults are the real ones.
  const DeviceProbeRegistry* registry = nullptr;
  common::ProcessRunner* runner = nullptr;
  const common::Clock* clock = nullptr;
  const ProductTable* products = nullptr;
};

// Long-lived inventory for the agent: creates the backends once (so the HIP
// probe's TTL cache and the loaded rocm-smi library are reused) and collects
// a full NodeInventory on demand. Thread-safe: the agent's status sender
// collects while its command reader may reap (which collects too); calls are
// serialised, a collect that waits on a hung runtime holds the others back.
class InventoryCollector {
 public:
  // INVALID_ARGUMENT for an unknown probe name. A backend that is
  // unavailable here (no DTK, no helper) is not an error: each Collect()
  // reports it as a finding and a probe_log line.
  static absl::StatusOr<std::unique_ptr<InventoryCollector>> Create(InventoryOptions options);

  // Probes every backend, merges, scans processes, attributes holders and
  // computes unreclaimed / schedulable figures. Never fails because of a
  // backend; only when nothing at all can be read would a caller care, and
  // that is visible as findings.
  dcufleet::v1::NodeInventory Collect() ABSL_LOCKS_EXCLUDED(mu_);
  // Same, with every process's fd table read (inventory command, reap).
  dcufleet::v1::NodeInventory CollectFull() ABSL_LOCKS_EXCLUDED(mu_);

  // Drops cached device views (HIP TTL cache) so the next Collect measures.
  void InvalidateDeviceView() ABSL_LOCKS_EXCLUDED(mu_);
  // The agent's instances now: the ones not stopped are its own holders (a
  // marked holder of any other id is a leftover). When an instance became
  // Ready or ended since the last call, the device view is asked afresh at
  // the next Collect: an engine holds its memory once it is Ready and gives
  // it back when it ends, and a view up to memprobe_ttl old would carry the
  // difference into the scheduler.
  void SetInstances(const std::vector<dcufleet::v1::InstanceStatus>& instances) ABSL_LOCKS_EXCLUDED(mu_);

  // How long each backend's Probe() took in the last Collect, and whether it
  // answered (dcu-agent's /metrics: probe durations and failures by backend).
  struct ProbeTiming {
    std::string backend;
    absl::Duration took;
    bool ok = false;
  };
  std::vector<ProbeTiming> last_probe_timings() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return last_timings_;
  }

 private:
  explicit InventoryCollector(InventoryOptions options) : options_(std::move(options)) {}
  dcufleet::v1::NodeInventory DoCollect(bool full_fd_scan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InvalidateDeviceViewLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::Mutex mu_;
  InventoryOptions options_ ABSL_GUARDED_BY(mu_);
  int64_t collects_ ABSL_GUARDED_BY(mu_) = 0;
  // The phase of each instance at the last SetInstances.
  absl::flat_hash_map<std::string, dcufleet::v1::InstancePhase> instance_phases_ ABSL_GUARDED_BY(mu_);
  struct Backend {
    std::string name;
    std::unique_ptr<DeviceProbe> probe;  // null when its factory failed
    absl::Status create_status;
  };
  std::vector<Backend> backends_ ABSL_GUARDED_BY(mu_);
  std::vector<ProbeTiming> last_timings_ ABSL_GUARDED_BY(mu_);
};

// One-shot: Create + CollectFull. INVALID_ARGUMENT for a bad probe list.
absl::StatusOr<dcufleet::v1::NodeInventory> CollectInventory(const InventoryOptions& options);


// `dcu-agent inventory` — the first thing a person runs on a broken node.
// Flags the lead's argv parsing maps onto InventoryArgs:
//   --root DIR                 filesystem root (default /)
//   -o, --output table|json    default table
//   --device_probe LIST        default sysfs_kfd,rocm_smi,hip; NVIDIA nodes:
//                              nvml,cuda (kNvidiaProbeList)
//   --memprobe PATH            dcu-memprobe helper (default next to dcu-agent)
//   --hip_library PATH         libamdhip64 for the helper
//   --nvml_library PATH        libnvidia-ml.so.1 for the nvml probe and the
//                              cuda helper (default: the loader's)
//   --cuda_library PATH        libcuda.so.1 for the cuda helper
//   --memprobe_timeout SECONDS default 20
//   --instance ID              a running instance id (repeatable); holders
//                              with another marker are leftovers
//   --proc_root DIR            where processes are listed (default <root>/proc)
//   --no_processes             skip the /proc scan
// Exit: 0 no warnings, 1 warnings/errors found (unreclaimed memory,
// leftovers, library conflict, probe failures...), 2 bad arguments.
struct InventoryArgs {
  std::string root = "/";
  std::string output = "table";
  std::string device_probe = kDefaultProbeList;
  std::string memprobe_path;
  std::string hip_library;
  std::string nvml_library;
  std::string cuda_library;
  double memprobe_timeout_s = 20;
  std::vector<std::string> instances;
  std::string proc_root;
  bool no_processes = false;
};
int RunInventoryCommand(const InventoryArgs& args, std::ostream& out, std::ostream& err);

// The table RunInventoryCommand prints (exposed for dcuctl describe node).
std::string FormatInventoryTable(const dcufleet::v1::NodeInventory& inv);

}  // namespace dcu::agent
