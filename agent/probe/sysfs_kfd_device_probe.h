#pragma once

#include <string>
#include <vector>

#include "agent/probe/device_probe.h"

namespace dcu::agent {

// Reads the KFD topology (class/kfd/kfd/topology/nodes/N/properties) and the
// matching DRM cards (class/drm/cardN/device/mem_info_vram_*) under a root
// directory, "/" on a real host or a fixture tree in tests.
class SysfsKfdDeviceProbe : public DeviceProbe {
 public:
  explicit SysfsKfdDeviceProbe(std::string root = "/") : root_(std::move(root)) {}
  std::string Name() const override { return "sysfs_kfd"; }
  absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() override;

 private:
  std::string root_;
};

}  // namespace dcu::agent
