#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// What one backend learned in one pass: its devices plus facts about the
// node that belong to no single device (a library conflict, the driver
// version, an unreadable file).
struct ProbeReport {
  std::vector<dcufleet::v1::Device> devices;
  std::vector<dcufleet::v1::Finding> findings;
  // Driver module version when the backend knows it ("6.3.14-V1.12.0").
  std::string driver_version;
};

// One source of truth about the node's accelerators (sysfs/KFD, rocm-smi,
// HIP memprobe, NVML, fake). Backends fill what they know into
// dcufleet.v1.Device messages and record, for every figure, its source.
//
// Arch contract: a backend puts only a validated arch (common::ValidateArch)
// in Device.arch; a value it rejects is left out and recorded as a device
// Finding with code "arch_value_rejected", so the merge step can take the
// next source (InventoryMerger).
class DeviceProbe {
 public:
  virtual ~DeviceProbe() = default;

  // Backend name as used in --device_probe ("sysfs_kfd", "rocm_smi", ...).
  virtual std::string Name() const = 0;

  // Enumerates devices visible on this node.
  // UNAVAILABLE: the backend's library, tool or tree is absent.
  // NOT_FOUND: the backend works but sees no devices.
  // PERMISSION_DENIED: the tree exists but cannot be read (e.g. EPERM in a
  //   container); the message names the path.
  // DEADLINE_EXCEEDED: a helper process did not answer in time.
  // INVALID_ARGUMENT / DATA_LOSS: a file was malformed; the message names it.
  virtual absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() = 0;

  // Devices plus node-level findings. Same error contract as Enumerate().
  // The default wraps Enumerate(); backends with node facts override it.
  virtual absl::StatusOr<ProbeReport> Probe() {
    auto devices = Enumerate();
    if (!devices.ok()) return devices.status();
    ProbeReport report;
    report.devices = *std::move(devices);
    return report;
  }

  // Drops any cached result so the next Probe() measures again (the HIP
  // memprobe caches with a TTL; a reap wants fresh figures). Default: no-op.
  virtual void Invalidate() {}
};

}  // namespace dcu::agent
