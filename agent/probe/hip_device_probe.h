#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/probe/device_probe.h"
#include "common/clock.h"
#include "common/process_runner.h"

namespace dcu::agent {

struct HipProbeOptions {
  // Which runtime the helper measures through: "hip" (libamdhip64) or "cuda"
  // (libcuda.so.1, the NVIDIA driver API). The probe's Name() is this.
  std::string runtime = "hip";
  // The dcu-memprobe executable. Empty = DefaultMemprobePath().
  std::string memprobe_path;
  // Passed as --hip_library when set (tests point it at a fake library).
  std::string hip_library;
  // CUDA only: passed as --cuda_library / --nvml_library when set.
  std::string cuda_library;
  std::string nvml_library;
  // A hung runtime (the second seed saw get_device_properties deadlock) is
  // killed after this long; the agent goes on.
  absl::Duration timeout = absl::Seconds(20);
  // Results (and failures) are reused this long; Invalidate() forces a new
  // measurement (after a reap).
  absl::Duration ttl = absl::Seconds(30);
  common::ProcessRunner* runner = nullptr;  // default: a SubprocessRunner
  const common::Clock* clock = nullptr;     // default: RealClock
};

// "dcu-memprobe" next to the running executable (/proc/self/exe), which is
// where the build and the packages put it.
std::string DefaultMemprobePath();

// Device view (hipMemGetInfo) through the dcu-memprobe helper run as a child
// process with a timeout, never in the agent's own process. Devices carry
// device_free/device_total (source "hip:hipMemGetInfo"), pci_bus from
// hipDeviceGetPCIBusId, arch from gcnArchName (validated) and the HIP
// ordinal as index.
//
// With runtime "cuda" (registered as the "cuda" probe) the same helper uses
// the CUDA driver API: device_free/device_total from cuMemGetInfo (source
// "cuda:cuMemGetInfo"), pci_bus from cuDeviceGetPCIBusId, unique_id from
// cuDeviceGetUuid ("GPU-..." as NVML spells it), arch "sm_NN" from the
// compute capability, vendor "nvidia", the CUDA ordinal as index, and
// device_self_used: what NVML says the helper's own context took.
//
// Errors: UNAVAILABLE when the helper is missing or cannot load HIP,
// DEADLINE_EXCEEDED when it hung before reporting any device (the message
// names the call it was in), NOT_FOUND for zero devices. A hang after some
// devices answered gives those devices plus a "probe_timeout" finding.
class HipDeviceProbe : public DeviceProbe {
 public:
  explicit HipDeviceProbe(HipProbeOptions options);
  std::string Name() const override { return options_.runtime; }
  absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() override;
  absl::StatusOr<ProbeReport> Probe() override;
  void Invalidate() override;

  // How many times the helper was started (tests check the cache).
  int runs() const;

 private:
  absl::StatusOr<ProbeReport> RunOnce();

  HipProbeOptions options_;
  std::unique_ptr<common::ProcessRunner> owned_runner_;
  mutable absl::Mutex mu_;
  std::optional<absl::StatusOr<ProbeReport>> cached_ ABSL_GUARDED_BY(mu_);
  absl::Time cached_at_ ABSL_GUARDED_BY(mu_);
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
};

// Parses dcu-memprobe output (JSON Lines) of the given runtime ("hip",
// "cuda"). Exposed for tests and for replaying captured output.
absl::StatusOr<ProbeReport> ParseMemprobeOutput(const common::ProcessOutput& out, absl::Duration timeout,
                                                int64_t now_ms, absl::string_view runtime = "hip");

}  // namespace dcu::agent
