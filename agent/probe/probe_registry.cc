#include "agent/probe/probe_registry.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/probe/hip_device_probe.h"
#include "agent/probe/nvml_device_probe.h"
#include "agent/probe/rocm_smi_device_probe.h"
#include "agent/probe/sysfs_kfd_device_probe.h"

namespace dcu::agent {

DeviceProbeRegistry DeviceProbeRegistry::WithBuiltins() {
  DeviceProbeRegistry r;
  r.Register("sysfs_kfd", [](const ProbeContext& ctx) -> absl::StatusOr<std::unique_ptr<DeviceProbe>> {
    return std::make_unique<SysfsKfdDeviceProbe>(ctx.root, ctx.products, ctx.clock);
  });
  r.Register("rocm_smi", [](const ProbeContext& ctx) -> absl::StatusOr<std::unique_ptr<DeviceProbe>> {
    RocmSmiOptions o;
    o.root = ctx.root;
    o.search_dirs = ctx.rocm_smi_dirs;
    o.products = ctx.products;
    o.clock = ctx.clock;
    auto p = RocmSmiDeviceProbe::Create(std::move(o));
    if (!p.ok()) return p.status();
    return std::unique_ptr<DeviceProbe>(std::move(*p));
  });
  r.Register("hip", [](const ProbeContext& ctx) -> absl::StatusOr<std::unique_ptr<DeviceProbe>> {
    HipProbeOptions o;
    o.memprobe_path = ctx.memprobe_path;
    o.hip_library = ctx.hip_library;
    o.timeout = ctx.memprobe_timeout;
    o.ttl = ctx.memprobe_ttl;
    o.runner = ctx.runner;
    o.clock = ctx.clock;
    return std::make_unique<HipDeviceProbe>(std::move(o));
  });
  r.Register("nvml", [](const ProbeContext& ctx) -> absl::StatusOr<std::unique_ptr<DeviceProbe>> {
    NvmlOptions o;
    if (!ctx.nvml_library.empty()) o.library = ctx.nvml_library;
    o.clock = ctx.clock;
    auto p = NvmlDeviceProbe::Create(std::move(o));
    if (!p.ok()) return p.status();
    return std::unique_ptr<DeviceProbe>(std::move(*p));
  });
  r.Register("cuda", [](const ProbeContext& ctx) -> absl::StatusOr<std::unique_ptr<DeviceProbe>> {
    HipProbeOptions o;
    o.runtime = "cuda";
    o.memprobe_path = ctx.memprobe_path;
    o.cuda_library = ctx.cuda_library;
    o.nvml_library = ctx.nvml_library;
    o.timeout = ctx.memprobe_timeout;
    o.ttl = ctx.memprobe_ttl;
    o.runner = ctx.runner;
    o.clock = ctx.clock;
    return std::make_unique<HipDeviceProbe>(std::move(o));
  });
  return r;
}

void DeviceProbeRegistry::Register(std::string name, DeviceProbeFactory factory) {
  factories_[std::move(name)] = std::move(factory);
}

bool DeviceProbeRegistry::Has(absl::string_view name) const { return factories_.find(name) != factories_.end(); }

std::vector<std::string> DeviceProbeRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_) out.push_back(n);
  return out;
}

absl::StatusOr<std::unique_ptr<DeviceProbe>> DeviceProbeRegistry::Create(absl::string_view name,
                                                                         const ProbeContext& ctx) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown device probe '", name, "' (known: ",
                                                   absl::StrJoin(Names(), ", "), ")"));
  }
  return it->second(ctx);
}

absl::StatusOr<std::vector<std::string>> ParseProbeList(absl::string_view flag) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(flag, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    for (const auto& o : out) {
      if (o == part) return absl::InvalidArgumentError(absl::StrCat("--device_probe lists '", part, "' twice"));
    }
    out.emplace_back(part);
  }
  if (out.empty()) return absl::InvalidArgumentError("--device_probe is empty (e.g. sysfs_kfd,rocm_smi,hip)");
  return out;
}

}  // namespace dcu::agent
