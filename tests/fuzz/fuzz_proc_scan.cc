// The /proc scanner on a fake process whose stat, cmdline, environ, fd link
// targets and KFD VRAM files come from the input (separated by "\n@@\n"),
// plus ParseProcStat on the raw input.
#include <cstdint>

#include "absl/container/flat_hash_set.h"
#include "agent/procscan/proc_scanner.h"
#include "common/proc_stat.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view raw(reinterpret_cast<const char*>(data), size);
  (void)dcu::common::ParseProcStat(raw);

  std::vector<std::string> p = dcu::fuzz::SplitInput(data, size, 7);
  const std::string root = dcu::fuzz::ScratchDir() + "/root";
  dcu::fuzz::WriteFile(root + "/proc/4242/stat", p[0]);
  dcu::fuzz::WriteFile(root + "/proc/4242/cmdline", p[1]);
  dcu::fuzz::WriteFile(root + "/proc/4242/environ", p[2]);
  dcu::fuzz::Symlink("/dev/kfd", root + "/proc/4242/fd/3");
  dcu::fuzz::Symlink(p[3], root + "/proc/4242/fd/4");
  dcu::fuzz::Symlink(p[4], root + "/proc/4242/fd/5");
  dcu::fuzz::WriteFile(root + "/proc/1/cmdline", "/sbin/init");
  dcu::fuzz::WriteFile(root + "/sys/class/kfd/kfd/proc/4242/vram_50000", p[5]);
  dcu::fuzz::WriteFile(root + "/sys/class/kfd/kfd/proc/4242/vram_" +
                           std::to_string(p[6].size() % 100000),
                       p[6]);
  dcu::agent::ProcScanOptions options;
  options.root = root;
  absl::flat_hash_set<std::string> live = {"qwen-1-abcdef"};
  auto scan = dcu::agent::ScanDeviceHolders(options, live);
  if (scan.ok()) {
    std::vector<dcufleet::v1::Device> devices(1);
    devices[0].set_drm_render_minor(128);
    devices[0].set_kfd_gpu_id(50000);
    std::vector<dcufleet::v1::ProcessHolder> unattributed;
    dcu::agent::AttachHolders(*scan, &devices, &unattributed);
  }
  // Remove the per-input VRAM file so files do not pile up across inputs.
  unlink((root + "/sys/class/kfd/kfd/proc/4242/vram_" + std::to_string(p[6].size() % 100000)).c_str());
  return 0;
}
