#include "agent/probe/rocm_smi_device_probe.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/probe/findings.h"
#include "agent/probe/memory_reading.h"
#include "common/arch.h"
#include "common/fs_util.h"

namespace dcu::agent {
namespace {

using dcufleet::v1::Device;

// rocm_smi.h: rsmi_status_t is an enum (int); RSMI_MEM_TYPE_VRAM is 0.
constexpr int kRsmiSuccess = 0;
constexpr int kRsmiMemTypeVram = 0;

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

struct RocmSmiDeviceProbe::Api {
  int (*init)(uint64_t) = nullptr;
  int (*shut_down)() = nullptr;
  int (*num_devices)(uint32_t*) = nullptr;
  int (*memory_total)(uint32_t, int, uint64_t*) = nullptr;
  int (*memory_usage)(uint32_t, int, uint64_t*) = nullptr;
  int (*pci_id)(uint32_t, uint64_t*) = nullptr;
  int (*vendor_id)(uint32_t, uint16_t*) = nullptr;
  int (*device_id)(uint32_t, uint16_t*) = nullptr;
  int (*unique_id)(uint32_t, uint64_t*) = nullptr;
  int (*gfx_version)(uint32_t, uint64_t*) = nullptr;
};

std::vector<std::string> DefaultRocmSmiSearchDirs() {
  return {"/opt/hyhal/lib",  "/opt/hyhal/lib64", "/opt/dtk/.hyhal/rocm_smi/lib",
          "/opt/dtk/lib",    "/opt/dtk/lib64",   "/opt/rocm/lib",
          "/opt/rocm/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"};
}

std::vector<RocmSmiCandidate> RocmSmiDeviceProbe::Inspect(const RocmSmiOptions& options) {
  std::vector<RocmSmiCandidate> out;
  const std::vector<std::string> dirs =
      options.search_dirs.empty() ? DefaultRocmSmiSearchDirs() : options.search_dirs;
  for (const std::string& dir : dirs) {
    for (const std::string& name : options.library_names) {
      RocmSmiCandidate c;
      c.dir = dir;
      c.host_path = absl::StrCat(dir, dir.empty() || dir.back() == '/' ? "" : "/", name);
      c.local_path = common::JoinRoot(options.root, c.host_path);
      if (!IsRegularFile(c.local_path)) continue;
      // RTLD_LAZY: a library with unresolvable functions still loads, so we
      // can tell "lacks rsmi_init" from "cannot load".
      void* h = dlopen(c.local_path.c_str(), RTLD_LAZY | RTLD_LOCAL);
      if (!h) {
        const char* e = dlerror();
        c.load_error = e ? e : "dlopen failed";
      } else {
        c.loadable = true;
        c.has_rsmi_init = dlsym(h, "rsmi_init") != nullptr;
        c.has_memory_calls = dlsym(h, "rsmi_dev_memory_total_get") != nullptr &&
                             dlsym(h, "rsmi_dev_memory_usage_get") != nullptr &&
                             dlsym(h, "rsmi_num_monitor_devices") != nullptr;
        dlclose(h);
      }
      out.push_back(std::move(c));
      break;  // the loader takes the first matching name in a directory
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<RocmSmiDeviceProbe>> RocmSmiDeviceProbe::Create(RocmSmiOptions options) {
  if (options.search_dirs.empty()) options.search_dirs = DefaultRocmSmiSearchDirs();
  if (!options.products) options.products = &ProductTable::Builtin();
  if (!options.clock) options.clock = &common::RealClock::Get();
  std::unique_ptr<RocmSmiDeviceProbe> probe(new RocmSmiDeviceProbe(options));
  probe->candidates_ = Inspect(options);
  const auto& cands = probe->candidates_;
  if (cands.empty()) {
    return absl::UnavailableError(absl::StrCat("no librocm_smi64 in ", absl::StrJoin(options.search_dirs, ":"),
                                               " under root '", options.root, "'"));
  }
  const RocmSmiCandidate* good = nullptr;
  for (const auto& c : cands) {
    if (c.usable()) {
      good = &c;
      break;
    }
  }
  const RocmSmiCandidate& first = cands.front();
  if (!good) {
    std::vector<std::string> why;
    for (const auto& c : cands) {
      why.push_back(absl::StrCat("'", c.host_path, "': ",
                                 !c.loadable ? c.load_error
                                 : !c.has_rsmi_init ? "does not export rsmi_init"
                                                    : "lacks rsmi_dev_memory_* calls"));
    }
    return absl::UnavailableError(absl::StrCat("no usable librocm_smi64: ", absl::StrJoin(why, "; ")));
  }
  if (!first.has_rsmi_init && &first != good) {
    // The order that fixes it: the good library's directory first, the rest
    // as they were.
    probe->recommended_.push_back(good->dir);
    for (const std::string& d : options.search_dirs) {
      if (d != good->dir) probe->recommended_.push_back(d);
    }
    std::string ld = absl::StrJoin(probe->recommended_, ":");
    probe->node_findings_.push_back(MakeFinding(
        kWarning, kRsmiConflict, "LD_LIBRARY_PATH",
        absl::StrCat("'", first.host_path, "' is first in the library search order and does not export rsmi_init",
                     first.loadable ? "" : absl::StrCat(" (cannot load: ", first.load_error, ")"), "; '",
                     good->host_path,
                     "' does. Programs that need rsmi_init (librccl, torch) fail with 'undefined symbol: "
                     "rsmi_init'. Fix: LD_LIBRARY_PATH=",
                     ld, ":${LD_LIBRARY_PATH}")));
  } else if (!first.usable() && &first != good) {
    probe->node_findings_.push_back(MakeFinding(
        kInfo, kRsmiNoInit, first.host_path,
        absl::StrCat("'", first.host_path, "' is first in search order but unusable (",
                     first.loadable ? "lacks rsmi_dev_memory_* calls" : first.load_error, "); using '",
                     good->host_path, "'")));
  }
  probe->chosen_ = *good;
  probe->handle_ = dlopen(good->local_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!probe->handle_) {
    const char* e = dlerror();
    return absl::UnavailableError(
        absl::StrCat("cannot load '", good->host_path, "': ", e ? e : "dlopen failed"));
  }
  auto api = std::make_unique<Api>();
  void* h = probe->handle_;
  api->init = reinterpret_cast<int (*)(uint64_t)>(dlsym(h, "rsmi_init"));
  api->shut_down = reinterpret_cast<int (*)()>(dlsym(h, "rsmi_shut_down"));
  api->num_devices = reinterpret_cast<int (*)(uint32_t*)>(dlsym(h, "rsmi_num_monitor_devices"));
  api->memory_total = reinterpret_cast<int (*)(uint32_t, int, uint64_t*)>(dlsym(h, "rsmi_dev_memory_total_get"));
  api->memory_usage = reinterpret_cast<int (*)(uint32_t, int, uint64_t*)>(dlsym(h, "rsmi_dev_memory_usage_get"));
  api->pci_id = reinterpret_cast<int (*)(uint32_t, uint64_t*)>(dlsym(h, "rsmi_dev_pci_id_get"));
  api->vendor_id = reinterpret_cast<int (*)(uint32_t, uint16_t*)>(dlsym(h, "rsmi_dev_vendor_id_get"));
  api->device_id = reinterpret_cast<int (*)(uint32_t, uint16_t*)>(dlsym(h, "rsmi_dev_id_get"));
  api->unique_id = reinterpret_cast<int (*)(uint32_t, uint64_t*)>(dlsym(h, "rsmi_dev_unique_id_get"));
  api->gfx_version =
      reinterpret_cast<int (*)(uint32_t, uint64_t*)>(dlsym(h, "rsmi_dev_target_graphics_version_get"));
  probe->api_ = std::move(api);
  return probe;
}

RocmSmiDeviceProbe::RocmSmiDeviceProbe(RocmSmiOptions options) : options_(std::move(options)) {}

RocmSmiDeviceProbe::~RocmSmiDeviceProbe() {
  absl::MutexLock lock(&mu_);
  if (initialized_ && api_ && api_->shut_down) api_->shut_down();
  // The library stays loaded: unloading vendor libraries with live threads
  // has crashed processes; the agent loads it once.
}

absl::StatusOr<std::vector<Device>> RocmSmiDeviceProbe::Enumerate() {
  auto r = Probe();
  if (!r.ok()) return r.status();
  return std::move(r->devices);
}

absl::StatusOr<ProbeReport> RocmSmiDeviceProbe::Probe() {
  absl::MutexLock lock(&mu_);
  ProbeReport report;
  report.findings = node_findings_;
  const std::string lib = chosen_.host_path;
  if (!initialized_) {
    int rc = api_->init(0);
    if (rc != kRsmiSuccess) {
      return absl::UnavailableError(absl::StrCat("rsmi_init in '", lib, "' returned ", rc));
    }
    initialized_ = true;
  }
  uint32_t n = 0;
  int rc = api_->num_devices(&n);
  if (rc != kRsmiSuccess) {
    return absl::UnavailableError(absl::StrCat("rsmi_num_monitor_devices in '", lib, "' returned ", rc));
  }
  if (n == 0) return absl::NotFoundError(absl::StrCat("rocm-smi ('", lib, "') sees no devices"));
  const int64_t now_ms = absl::ToUnixMillis(options_.clock->Now());
  for (uint32_t i = 0; i < n && i < 1024; ++i) {
    Device dev;
    dev.set_index(static_cast<int>(i));
    uint64_t bdf = 0;
    if (api_->pci_id && api_->pci_id(i, &bdf) == kRsmiSuccess) {
      // rocm_smi.h: BDFID = domain << 32 | bus << 8 | device << 3 | function.
      dev.set_pci_bus(absl::StrFormat("%04x:%02x:%02x.%x", (bdf >> 32) & 0xffffffff, (bdf >> 8) & 0xff,
                                      (bdf >> 3) & 0x1f, bdf & 0x7));
    }
    uint16_t v16 = 0;
    if (api_->vendor_id && api_->vendor_id(i, &v16) == kRsmiSuccess) dev.set_pci_vendor_id(v16);
    if (api_->device_id && api_->device_id(i, &v16) == kRsmiSuccess) dev.set_pci_device_id(v16);
    std::string vname = VendorName(dev.pci_vendor_id());
    if (!vname.empty()) dev.set_vendor(vname);
    if (auto m = options_.products->ByPciId(dev.pci_vendor_id(), dev.pci_device_id())) {
      dev.set_product_name(m->name);
      dev.set_product_name_source(m->source);
    }
    uint64_t uid = 0;
    if (api_->unique_id && api_->unique_id(i, &uid) == kRsmiSuccess && uid != 0) {
      dev.set_unique_id(absl::StrFormat("%016x", uid));
    }
    uint64_t gfx = 0;
    if (api_->gfx_version && api_->gfx_version(i, &gfx) == kRsmiSuccess) {
      // rocm-smi prints "gfx" + this number; a garbage value (UINT64_MAX gave
      // DTK's "gfx18446744073709551615") is rejected here.
      std::string raw = absl::StrCat("gfx", gfx);
      auto arch = common::NormalizeArch(raw);
      if (arch.ok()) {
        dev.set_arch(*arch);
        dev.set_arch_source("rocm_smi:rsmi_dev_target_graphics_version_get");
      } else {
        *dev.add_findings() = MakeFinding(
            kWarning, kArchRejected, "rocm_smi:rsmi_dev_target_graphics_version_get",
            absl::StrCat("rejected '", raw.substr(0, 40), "' from rsmi_dev_target_graphics_version_get in '", lib,
                         "': ", arch.status().message()));
      }
    }
    uint64_t total = 0, used = 0;
    if (api_->memory_total(i, kRsmiMemTypeVram, &total) == kRsmiSuccess) {
      *dev.mutable_total() = MakeReading(static_cast<int64_t>(total), "rocm_smi:rsmi_dev_memory_total_get", now_ms);
    }
    if (api_->memory_usage(i, kRsmiMemTypeVram, &used) == kRsmiSuccess) {
      *dev.mutable_host_used() = MakeReading(static_cast<int64_t>(used), "rocm_smi:rsmi_dev_memory_usage_get", now_ms);
    }
    if (dev.total().valid() && dev.host_used().valid()) {
      *dev.mutable_host_free() = MakeReading(std::max<int64_t>(0, dev.total().bytes() - dev.host_used().bytes()),
                                         "derived:rocm_smi total - used", now_ms);
    }
    report.devices.push_back(std::move(dev));
  }
  return report;
}

}  // namespace dcu::agent
