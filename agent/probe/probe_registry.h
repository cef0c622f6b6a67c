#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/probe/device_probe.h"
#include "agent/probe/product_table.h"
#include "common/clock.h"
#include "common/process_runner.h"

namespace dcu::agent {

// Everything a backend factory may need; each takes what applies to it.
struct ProbeContext {
  std::string root = "/";
  const ProductTable* products = nullptr;  // default: builtin table
  const common::Clock* clock = nullptr;    // default: RealClock
  common::ProcessRunner* runner = nullptr; // default: SubprocessRunner
  // hip
  std::string memprobe_path;  // default: DefaultMemprobePath()
  std::string hip_library;
  absl::Duration memprobe_timeout = absl::Seconds(20);
  absl::Duration memprobe_ttl = absl::Seconds(30);
  // rocm_smi: host paths, searched in order under root; empty = defaults.
  std::vector<std::string> rocm_smi_dirs;
  // nvml, and the cuda helper's own-context lookup: empty = the loader's
  // libnvidia-ml.so.1.
  std::string nvml_library;
  // cuda: empty = the loader's libcuda.so.1.
  std::string cuda_library;
};

// A factory returns UNAVAILABLE when its library or tool is absent (Mesos
// nvml::isAvailable()); the inventory records that as a finding and goes on.
using DeviceProbeFactory =
    std::function<absl::StatusOr<std::unique_ptr<DeviceProbe>>(const ProbeContext&)>;

// Name -> factory (Mesos isolator "creators"), used for
// --device_probe=sysfs_kfd,rocm_smi,hip (Hygon/AMD) or nvml,cuda (NVIDIA).
class DeviceProbeRegistry {
 public:
  // A registry holding sysfs_kfd, rocm_smi, hip, nvml and cuda.
  static DeviceProbeRegistry WithBuiltins();

  void Register(std::string name, DeviceProbeFactory factory);
  bool Has(absl::string_view name) const;
  std::vector<std::string> Names() const;
  // INVALID_ARGUMENT for an unknown name (the message lists the known ones);
  // otherwise whatever the factory returns.
  absl::StatusOr<std::unique_ptr<DeviceProbe>> Create(absl::string_view name, const ProbeContext& ctx) const;

 private:
  std::map<std::string, DeviceProbeFactory, std::less<>> factories_;
};

// Parses "sysfs_kfd,rocm_smi,hip" (spaces ignored, order kept, duplicates
// and empty lists refused with INVALID_ARGUMENT).
absl::StatusOr<std::vector<std::string>> ParseProbeList(absl::string_view flag);

inline constexpr char kDefaultProbeList[] = "sysfs_kfd,rocm_smi,hip";
// What an NVIDIA node runs: NVML's host view, then the CUDA device view.
inline constexpr char kNvidiaProbeList[] = "nvml,cuda";

}  // namespace dcu::agent
