#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// One source of truth about the node's accelerators (sysfs/KFD, rocm-smi,
// HIP memprobe, NVML, fake). Backends fill what they know into
// dcufleet.v1.Device messages and record, for every figure, its source.
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
  // INVALID_ARGUMENT / DATA_LOSS: a file was malformed; the message names it.
  virtual absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() = 0;
};

}  // namespace dcu::agent
