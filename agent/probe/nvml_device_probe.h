#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agent/probe/device_probe.h"
#include "common/clock.h"

namespace dcu::agent {

inline constexpr char kNvidiaVendor[] = "nvidia";
inline constexpr uint32_t kNvidiaPciVendorId = 0x10de;

struct NvmlOptions {
  // The library: a path, or a bare name for the dynamic loader's search
  // path. Tests point it at a fake built by the tests.
  std::string library = "libnvidia-ml.so.1";
  const common::Clock* clock = nullptr;  // default: RealClock
};

// Host view of NVIDIA GPUs through NVML, loaded with dlopen (never linked),
// so one agent binary runs on hosts with and without the NVIDIA driver.
//
// Per device: index (NVML order), name, UUID (unique_id), PCI bus (as
// "0000:19:00.0", the sysfs spelling, whatever width NVML gives the
// domain), PCI ids, compute capability as the arch ("sm_90", validated),
// total / used / free and the driver's reserved memory
// (nvmlDeviceGetMemoryInfo_v2, else v1), the /dev/nvidia<minor> minor, and
// the compute and graphics processes with their memory (vendor_processes;
// vram_bytes -1 when NVML says "not available").
//
// NVML runs in the agent's process (like rocm-smi): it is a management
// library that reads the kernel driver's state and holds no device context.
// nvmlInit is called once, at the first Probe(); a failure there is retried
// at the next Probe().
class NvmlDeviceProbe : public DeviceProbe {
 public:
  // UNAVAILABLE when the library cannot be loaded or lacks nvmlInit /
  // device enumeration / memory info (the message says which).
  static absl::StatusOr<std::unique_ptr<NvmlDeviceProbe>> Create(NvmlOptions options);
  ~NvmlDeviceProbe() override;

  std::string Name() const override { return "nvml"; }
  absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() override;
  // UNAVAILABLE when nvmlInit fails (driver not loaded, version mismatch:
  // the message carries nvmlErrorString), NOT_FOUND for zero devices. A
  // device whose handle cannot be had is reported with a finding; the
  // others are still measured.
  absl::StatusOr<ProbeReport> Probe() override;

  const std::string& library() const { return options_.library; }

 private:
  struct Api;
  explicit NvmlDeviceProbe(NvmlOptions options);
  std::string Error(int rc) const;

  NvmlOptions options_;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  absl::Mutex mu_;
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace dcu::agent
