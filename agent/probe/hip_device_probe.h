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
  // The dcu-memprobe executable. Empty = DefaultMemprobePath().
  std::string memprobe_path;
  // Passed as --hip_library when set (tests point it at a fake library).
  std::string hip_library;
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
// Errors: UNAVAILABLE when the helper is missing or cannot load HIP,
// DEADLINE_EXCEEDED when it hung before reporting any device (the message
// names the call it was in), NOT_FOUND for zero devices. A hang after some
// devices answered gives those devices plus a "probe_timeout" finding.
class HipDeviceProbe : public DeviceProbe {
 public:
  explicit HipDeviceProbe(HipProbeOptions options);
  std::string Name() const override { return "hip"; }
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

// Parses dcu-memprobe output (JSON Lines). Exposed for tests.
absl::StatusOr<ProbeReport> ParseMemprobeOutput(const common::ProcessOutput& out, absl::Duration timeout,
                                                int64_t now_ms);

}  // namespace dcu::agent
