// The sysfs/KFD probe on a fake tree whose files come from the input:
// KFD topology properties, gpu_id, name, memory banks, DRM card files,
// uevent and the driver version. Separated by "\n@@\n" lines.
#include <cstdint>

#include "agent/probe/sysfs_kfd_device_probe.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
const char* const kFiles[] = {
    "sys/class/kfd/kfd/topology/nodes/1/properties",
    "sys/class/kfd/kfd/topology/nodes/1/gpu_id",
    "sys/class/kfd/kfd/topology/nodes/1/name",
    "sys/class/kfd/kfd/topology/nodes/1/mem_banks/0/properties",
    "sys/class/kfd/kfd/topology/nodes/1/mem_banks/0/used_memory",
    "sys/class/drm/card1/device/vendor",
    "sys/class/drm/card1/device/device",
    "sys/class/drm/card1/device/uevent",
    "sys/class/drm/card1/device/unique_id",
    "sys/class/drm/card1/device/mem_info_vram_total",
    "sys/class/drm/card1/device/mem_info_vram_used",
    "sys/module/hydcu/version",
    "sys/class/kfd/kfd/topology/nodes/0/properties",
};
constexpr size_t kCount = sizeof(kFiles) / sizeof(kFiles[0]);
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string root = dcu::fuzz::ScratchDir() + "/root";
  std::vector<std::string> parts = dcu::fuzz::SplitInput(data, size, kCount);
  for (size_t i = 0; i < kCount; ++i) dcu::fuzz::WriteFile(root + "/" + kFiles[i], parts[i]);
  dcu::fuzz::WriteFile(root + "/dev/kfd", "");
  dcu::fuzz::WriteFile(root + "/dev/dri/renderD128", "");
  dcu::agent::SysfsKfdDeviceProbe probe(root);
  auto report = probe.Probe();
  if (report.ok()) {
    for (const auto& d : report->devices) (void)d.ByteSizeLong();
  }
  (void)dcu::agent::ReadDriverVersion(root);
  return 0;
}
