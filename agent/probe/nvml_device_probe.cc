#include "agent/probe/nvml_device_probe.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/probe/findings.h"
#include "agent/probe/memory_reading.h"
#include "agent/probe/pci_bus.h"
#include "common/arch.h"

namespace dcu::agent {
namespace {

using dcufleet::v1::Device;

// nvml.h (NVML API 11/12). Only what the probe reads; layouts as in the
// header, which fixes them for ABI compatibility across driver releases.
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;
using NvmlDevice = void*;

struct NvmlPciInfo {  // nvmlPciInfo_t (v3 layout)
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;  // device id << 16 | vendor id
  unsigned int pci_subsystem_id;
  char bus_id[32];
};

struct NvmlMemoryV1 {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlMemoryV2 {  // nvmlMemory_v2_t
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML_STRUCT_VERSION(Memory, 2) = sizeof | 2 << 24.
constexpr unsigned int kNvmlMemoryV2Version = static_cast<unsigned int>(sizeof(NvmlMemoryV2)) | (2u << 24);
static_assert(sizeof(NvmlMemoryV2) == 40, "nvmlMemory_v2_t is 40 bytes");

struct NvmlProcessInfoV1 {  // nvmlProcessInfo_v1_t
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
struct NvmlProcessInfoV2 {  // nvmlProcessInfo_v2_t == nvmlProcessInfo_t (the _v2 and _v3 calls)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
static_assert(sizeof(NvmlProcessInfoV1) == 16 && sizeof(NvmlProcessInfoV2) == 24, "NVML process info layouts");

template <typename T>
T Sym(void* h, const char* name) {
  return reinterpret_cast<T>(dlsym(h, name));
}

}  // namespace

struct NvmlDeviceProbe::Api {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*count)(unsigned int*) = nullptr;
  int (*handle_by_index)(unsigned int, NvmlDevice*) = nullptr;
  int (*name)(NvmlDevice, char*, unsigned int) = nullptr;
  int (*uuid)(NvmlDevice, char*, unsigned int) = nullptr;
  int (*pci_info)(NvmlDevice, NvmlPciInfo*) = nullptr;
  int (*cuda_cc)(NvmlDevice, int*, int*) = nullptr;
  int (*memory_v2)(NvmlDevice, NvmlMemoryV2*) = nullptr;
  int (*memory_v1)(NvmlDevice, NvmlMemoryV1*) = nullptr;
  int (*minor)(NvmlDevice, unsigned int*) = nullptr;
  int (*driver_version)(char*, unsigned int) = nullptr;
  // Process lists: the _v3/_v2 calls take nvmlProcessInfo_v2_t, the plain
  // (v1) call the shorter nvmlProcessInfo_v1_t.
  int (*compute_v2)(NvmlDevice, unsigned int*, NvmlProcessInfoV2*) = nullptr;
  int (*compute_v1)(NvmlDevice, unsigned int*, NvmlProcessInfoV1*) = nullptr;
  const char* compute_name = "";
  int (*graphics_v2)(NvmlDevice, unsigned int*, NvmlProcessInfoV2*) = nullptr;
  int (*graphics_v1)(NvmlDevice, unsigned int*, NvmlProcessInfoV1*) = nullptr;
  const char* graphics_name = "";
};

absl::StatusOr<std::unique_ptr<NvmlDeviceProbe>> NvmlDeviceProbe::Create(NvmlOptions options) {
  if (options.library.empty()) options.library = "libnvidia-ml.so.1";
  if (!options.clock) options.clock = &common::RealClock::Get();
  std::unique_ptr<NvmlDeviceProbe> probe(new NvmlDeviceProbe(options));
  void* h = dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return absl::UnavailableError(
        absl::StrCat("cannot load NVML '", options.library, "': ", e ? e : "dlopen failed"));
  }
  probe->handle_ = h;
  auto api = std::make_unique<Api>();
  api->init = Sym<int (*)()>(h, "nvmlInit_v2");
  if (!api->init) api->init = Sym<int (*)()>(h, "nvmlInit");
  api->shutdown = Sym<int (*)()>(h, "nvmlShutdown");
  api->error_string = Sym<const char* (*)(int)>(h, "nvmlErrorString");
  api->count = Sym<int (*)(unsigned int*)>(h, "nvmlDeviceGetCount_v2");
  if (!api->count) api->count = Sym<int (*)(unsigned int*)>(h, "nvmlDeviceGetCount");
  api->handle_by_index = Sym<int (*)(unsigned int, NvmlDevice*)>(h, "nvmlDeviceGetHandleByIndex_v2");
  if (!api->handle_by_index) {
    api->handle_by_index = Sym<int (*)(unsigned int, NvmlDevice*)>(h, "nvmlDeviceGetHandleByIndex");
  }
  api->name = Sym<int (*)(NvmlDevice, char*, unsigned int)>(h, "nvmlDeviceGetName");
  api->uuid = Sym<int (*)(NvmlDevice, char*, unsigned int)>(h, "nvmlDeviceGetUUID");
  api->pci_info = Sym<int (*)(NvmlDevice, NvmlPciInfo*)>(h, "nvmlDeviceGetPciInfo_v3");
  if (!api->pci_info) api->pci_info = Sym<int (*)(NvmlDevice, NvmlPciInfo*)>(h, "nvmlDeviceGetPciInfo_v2");
  api->cuda_cc = Sym<int (*)(NvmlDevice, int*, int*)>(h, "nvmlDeviceGetCudaComputeCapability");
  api->memory_v2 = Sym<int (*)(NvmlDevice, NvmlMemoryV2*)>(h, "nvmlDeviceGetMemoryInfo_v2");
  api->memory_v1 = Sym<int (*)(NvmlDevice, NvmlMemoryV1*)>(h, "nvmlDeviceGetMemoryInfo");
  api->minor = Sym<int (*)(NvmlDevice, unsigned int*)>(h, "nvmlDeviceGetMinorNumber");
  api->driver_version = Sym<int (*)(char*, unsigned int)>(h, "nvmlSystemGetDriverVersion");
  for (const char* n : {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}) {
    if (!api->compute_v2 && (api->compute_v2 = Sym<int (*)(NvmlDevice, unsigned int*, NvmlProcessInfoV2*)>(h, n))) {
      api->compute_name = n;
    }
  }
  if (!api->compute_v2) {
    api->compute_v1 =
        Sym<int (*)(NvmlDevice, unsigned int*, NvmlProcessInfoV1*)>(h, "nvmlDeviceGetComputeRunningProcesses");
    if (api->compute_v1) api->compute_name = "nvmlDeviceGetComputeRunningProcesses";
  }
  for (const char* n : {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"}) {
    if (!api->graphics_v2 && (api->graphics_v2 = Sym<int (*)(NvmlDevice, unsigned int*, NvmlProcessInfoV2*)>(h, n))) {
      api->graphics_name = n;
    }
  }
  if (!api->graphics_v2) {
    api->graphics_v1 =
        Sym<int (*)(NvmlDevice, unsigned int*, NvmlProcessInfoV1*)>(h, "nvmlDeviceGetGraphicsRunningProcesses");
    if (api->graphics_v1) api->graphics_name = "nvmlDeviceGetGraphicsRunningProcesses";
  }
  std::string missing;
  if (!api->init) missing += " nvmlInit";
  if (!api->count) missing += " nvmlDeviceGetCount";
  if (!api->handle_by_index) missing += " nvmlDeviceGetHandleByIndex";
  if (!api->memory_v2 && !api->memory_v1) missing += " nvmlDeviceGetMemoryInfo";
  if (!missing.empty()) {
    return absl::UnavailableError(absl::StrCat("NVML '", options.library, "' lacks", missing));
  }
  probe->api_ = std::move(api);
  return probe;
}

NvmlDeviceProbe::NvmlDeviceProbe(NvmlOptions options) : options_(std::move(options)) {}

NvmlDeviceProbe::~NvmlDeviceProbe() {
  absl::MutexLock lock(&mu_);
  if (initialized_ && api_ && api_->shutdown) api_->shutdown();
  // The library stays loaded (see RocmSmiDeviceProbe).
}

std::string NvmlDeviceProbe::Error(int rc) const {
  const char* s = api_ && api_->error_string ? api_->error_string(rc) : nullptr;
  return s ? absl::StrCat(rc, " (", s, ")") : absl::StrCat(rc);
}

absl::StatusOr<std::vector<Device>> NvmlDeviceProbe::Enumerate() {
  auto r = Probe();
  if (!r.ok()) return r.status();
  return std::move(r->devices);
}

absl::StatusOr<ProbeReport> NvmlDeviceProbe::Probe() {
  absl::MutexLock lock(&mu_);
  const std::string& lib = options_.library;
  if (!initialized_) {
    int rc = api_->init();
    if (rc != kNvmlSuccess) {
      return absl::UnavailableError(absl::StrCat("nvmlInit in '", lib, "' returned ", Error(rc)));
    }
    initialized_ = true;
  }
  ProbeReport report;
  if (api_->driver_version) {
    char buf[96] = {0};
    if (api_->driver_version(buf, sizeof(buf) - 1) == kNvmlSuccess) report.driver_version = buf;
  }
  unsigned int n = 0;
  int rc = api_->count(&n);
  if (rc != kNvmlSuccess) {
    return absl::UnavailableError(absl::StrCat("nvmlDeviceGetCount in '", lib, "' returned ", Error(rc)));
  }
  if (n == 0) return absl::NotFoundError(absl::StrCat("NVML ('", lib, "') sees no devices"));
  const int64_t now_ms = absl::ToUnixMillis(options_.clock->Now());
  for (unsigned int i = 0; i < n && i < 1024; ++i) {
    Device dev;
    dev.set_index(static_cast<int>(i));
    dev.set_vendor(kNvidiaVendor);
    NvmlDevice h = nullptr;
    rc = api_->handle_by_index(i, &h);
    if (rc != kNvmlSuccess) {
      // Typically NVML_ERROR_GPU_IS_LOST or NO_PERMISSION for one GPU: the
      // others are still worth reporting.
      *dev.add_findings() = MakeFinding(kError, kProbeFailed, "nvml:nvmlDeviceGetHandleByIndex",
                                        absl::StrCat("device ", i, ": nvmlDeviceGetHandleByIndex returned ", Error(rc)));
      report.devices.push_back(std::move(dev));
      continue;
    }
    char buf[128] = {0};
    if (api_->name && api_->name(h, buf, sizeof(buf) - 1) == kNvmlSuccess) {
      dev.set_product_name(buf);
      dev.set_product_name_source("nvml:nvmlDeviceGetName");
    }
    std::fill(std::begin(buf), std::end(buf), 0);
    if (api_->uuid && api_->uuid(h, buf, sizeof(buf) - 1) == kNvmlSuccess) dev.set_unique_id(buf);
    NvmlPciInfo pci{};
    if (api_->pci_info && api_->pci_info(h, &pci) == kNvmlSuccess) {
      pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
      dev.set_pci_bus(NormalizePciBusId(pci.bus_id));
      dev.set_pci_vendor_id(pci.pci_device_id & 0xffff);
      dev.set_pci_device_id(pci.pci_device_id >> 16);
    }
    int major = 0, minor_cc = 0;
    if (api_->cuda_cc && api_->cuda_cc(h, &major, &minor_cc) == kNvmlSuccess) {
      std::string raw = absl::StrCat("sm_", major, minor_cc);
      auto arch = common::NormalizeArch(raw);
      if (arch.ok()) {
        dev.set_arch(*arch);
        dev.set_arch_source("nvml:nvmlDeviceGetCudaComputeCapability");
      } else {
        *dev.add_findings() = MakeFinding(kWarning, kArchRejected, "nvml:nvmlDeviceGetCudaComputeCapability",
                                          absl::StrCat("rejected compute capability ", major, ".", minor_cc, " ('",
                                                       raw, "'): ", arch.status().message()));
      }
    }
    unsigned int minor = 0;
    if (api_->minor && api_->minor(h, &minor) == kNvmlSuccess) dev.set_nvidia_minor(static_cast<int>(minor));

    // Memory: v2 separates the driver's reserved memory from what processes
    // allocated; v1's "used" includes it.
    bool have_memory = false;
    if (api_->memory_v2) {
      NvmlMemoryV2 m{};
      m.version = kNvmlMemoryV2Version;
      rc = api_->memory_v2(h, &m);
      if (rc == kNvmlSuccess) {
        have_memory = true;
        constexpr char kSrc[] = "nvml:nvmlDeviceGetMemoryInfo_v2";
        *dev.mutable_total() = MakeReading(static_cast<int64_t>(m.total), kSrc, now_ms);
        *dev.mutable_host_used() = MakeReading(static_cast<int64_t>(m.used), kSrc, now_ms);
        *dev.mutable_host_free() = MakeReading(static_cast<int64_t>(m.free), kSrc, now_ms);
        *dev.mutable_host_reserved() = MakeReading(static_cast<int64_t>(m.reserved), kSrc, now_ms);
      }
    }
    if (!have_memory && api_->memory_v1) {
      NvmlMemoryV1 m{};
      rc = api_->memory_v1(h, &m);
      if (rc == kNvmlSuccess) {
        have_memory = true;
        constexpr char kSrc[] = "nvml:nvmlDeviceGetMemoryInfo";
        *dev.mutable_total() = MakeReading(static_cast<int64_t>(m.total), kSrc, now_ms);
        *dev.mutable_host_used() = MakeReading(static_cast<int64_t>(m.used), kSrc, now_ms);
        *dev.mutable_host_free() = MakeReading(static_cast<int64_t>(m.free), kSrc, now_ms);
      }
    }
    if (!have_memory) {
      *dev.add_findings() = MakeFinding(kWarning, kProbeFailed, "nvml:nvmlDeviceGetMemoryInfo",
                                        absl::StrCat("device ", i, ": nvmlDeviceGetMemoryInfo returned ", Error(rc)));
    }

    // Processes: compute and graphics lists, one entry per pid (a process
    // in both lists is reported with the larger figure, since both count
    // the same allocations).
    std::map<unsigned int, long long> procs;
    std::vector<std::string> sources, list_errors;
    auto list = [&](auto fn_v2, auto fn_v1, const char* name) {
      if (!fn_v2 && !fn_v1) return;
      std::vector<NvmlProcessInfoV2> v2;
      std::vector<NvmlProcessInfoV1> v1;
      unsigned int count = 0;
      int r = kNvmlInsufficientSize;
      // The list can grow between the sizing call and the real one.
      for (int attempt = 0; attempt < 4 && r == kNvmlInsufficientSize; ++attempt) {
        count = count + 16;
        if (fn_v2) {
          v2.assign(count, NvmlProcessInfoV2{});
          r = fn_v2(h, &count, v2.data());
        } else {
          v1.assign(count, NvmlProcessInfoV1{});
          r = fn_v1(h, &count, v1.data());
        }
      }
      if (r != kNvmlSuccess) {
        list_errors.push_back(absl::StrCat(name, " returned ", Error(r)));
        return;
      }
      sources.push_back(absl::StrCat("nvml:", name));
      for (unsigned int k = 0; k < count; ++k) {
        unsigned int pid = fn_v2 ? v2[k].pid : v1[k].pid;
        unsigned long long mem = fn_v2 ? v2[k].used_gpu_memory : v1[k].used_gpu_memory;
        long long bytes = mem == kNvmlValueNotAvailable ? -1 : static_cast<long long>(mem);
        auto [it, fresh] = procs.emplace(pid, bytes);
        if (!fresh) it->second = std::max(it->second, bytes);
      }
    };
    list(api_->compute_v2, api_->compute_v1, api_->compute_name);
    list(api_->graphics_v2, api_->graphics_v1, api_->graphics_name);
    if (!list_errors.empty()) {
      *dev.add_findings() = MakeFinding(kWarning, kProbeFailed, "nvml:processes",
                                        absl::StrCat("device ", i, ": ", absl::StrJoin(list_errors, "; ")));
    }
    // Only a complete list is a list: with one of them missing, a holder
    // absent from it may still hold memory.
    if (!sources.empty() && list_errors.empty()) {
      dev.set_vendor_processes_source(absl::StrJoin(sources, "+"));
      for (const auto& [pid, bytes] : procs) {
        auto* p = dev.add_vendor_processes();
        p->set_pid(static_cast<int>(pid));
        p->set_vram_bytes(bytes);
        p->set_vram_source(absl::StrCat(dev.vendor_processes_source(), bytes < 0 ? " (not available)" : ""));
      }
    }
    report.devices.push_back(std::move(dev));
  }
  return report;
}

}  // namespace dcu::agent
