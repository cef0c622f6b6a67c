#pragma once

#include <string>
#include <vector>

#include "agent/probe/device_probe.h"
#include "agent/probe/product_table.h"
#include "common/clock.h"

namespace dcu::agent {

// Reads the KFD topology (sys/class/kfd/kfd/topology/nodes/N/{properties,
// gpu_id,name,mem_banks/*}) and the matching DRM cards
// (sys/class/drm/cardN/device/{mem_info_vram_total,mem_info_vram_used,
// unique_id,vendor,device,uevent}) and sys/module/{hycu,hydcu,amdgpu}/version
// under a root directory: "/" on a real host, a fixture tree in tests.
//
// - arch: decoded from gfx_target_version (90006 -> gfx906, 90010 -> gfx90a);
//   an old kernel without the key gives no arch (a finding says so) and
//   garbage is rejected with a finding; the merge step takes the next source.
// - KFD node <-> DRM card: by render minor (cardN/device/drm/renderD<m> or
//   class/drm/renderD<m> on the same PCI device), else by PCI address.
// - Hygon (0x1d94) and AMD (0x1002) devices are taken whatever their PCI
//   class (DCUs are not display controllers); any GPU node of KFD counts.
// - Product names come from the ProductTable data, then the KFD node name.
// - Unreadable files (EPERM/EACCES in a container) become findings; an
//   unreadable topology directory is PERMISSION_DENIED, never a crash.
class SysfsKfdDeviceProbe : public DeviceProbe {
 public:
  explicit SysfsKfdDeviceProbe(std::string root = "/", const ProductTable* products = nullptr,
                               const common::Clock* clock = nullptr)
      : root_(std::move(root)),
        products_(products ? products : &ProductTable::Builtin()),
        clock_(clock ? clock : &common::RealClock::Get()) {}
  std::string Name() const override { return "sysfs_kfd"; }
  absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() override;
  absl::StatusOr<ProbeReport> Probe() override;

 private:
  std::string root_;
  const ProductTable* products_;
  const common::Clock* clock_;
};

// Driver module version under `root`: "hydcu 6.3.14-V1.12.0"; "" when no
// module/{hycu,hydcu,amdgpu}/version exists.
std::string ReadDriverVersion(const std::string& root);

}  // namespace dcu::agent
