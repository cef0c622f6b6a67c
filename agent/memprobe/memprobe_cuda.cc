// dcu-memprobe --runtime cuda: the device view of NVIDIA GPUs through the
// CUDA driver API (libcuda.so.1, dlopened, never linked).
//
// cuInit(0), then per device: cuDeviceGet, cuDeviceGetName,
// cuDeviceGetPCIBusId, cuDeviceGetUuid(_v2), the compute capability
// (cuDeviceGetAttribute 75/76), cuDevicePrimaryCtxRetain + cuCtxSetCurrent
// (a context is what cuMemGetInfo needs), cuMemGetInfo_v2, and the primary
// context released again before the next device, so at most one context of
// the helper exists at a time.
//
// The helper's own context takes device memory (about half a GiB on a
// Hopper GPU). So that the agent does not take it for memory nobody
// explains, the helper asks NVML (when it can be loaded) what its own pid
// uses on the device while the context exists, and reports it as
// "self_used". Output lines are those of the HIP path plus "uuid",
// "self_used" and "self_source":
//   {"probe":"dcu-memprobe","runtime":"cuda","cuda_library":"libcuda.so.1","driver_version":13000}
//   {"device_count":1}
//   {"index":0,"pci_bus":"0000:19:00.0","name":"NVIDIA H200","uuid":"GPU-...","arch":"sm_90",
//    "free":...,"total":...,"self_used":...,"self_source":"nvml:nvmlDeviceGetComputeRunningProcesses_v3"}
//   {"done":true}
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/memprobe/memprobe_util.h"

namespace dcu::memprobe {
namespace {

// cuda.h: CUresult is an enum (0 = CUDA_SUCCESS), CUdevice an int, CUcontext
// a pointer, CUuuid 16 bytes.
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceGetPCIBusId = int (*)(char*, int, int);
using CuDeviceGetUuid = int (*)(unsigned char*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuPrimaryCtxRetain = int (*)(void**, int);
using CuPrimaryCtxRelease = int (*)(int);
using CuCtxSetCurrent = int (*)(void*);
using CuMemGetInfo = int (*)(size_t*, size_t*);
using CuGetErrorName = int (*)(int, const char**);

constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

// NVML, for the helper's own footprint (see nvml_device_probe.cc for the
// layouts).
struct NvmlProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
struct NvmlProcessInfoV2 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

struct Nvml {
  bool ready = false;
  int (*handle_by_bus)(const char*, void**) = nullptr;
  int (*procs_v2)(void*, unsigned int*, NvmlProcessInfoV2*) = nullptr;
  int (*procs_v1)(void*, unsigned int*, NvmlProcessInfoV1*) = nullptr;
  std::string procs_name;

  // The memory NVML attributes to this process on the device at `bus`, or
  // -1.
  long long SelfUsed(const std::string& bus) const {
    if (!ready || !handle_by_bus) return -1;
    void* h = nullptr;
    if (handle_by_bus(bus.c_str(), &h) != 0) return -1;
    const unsigned int self = static_cast<unsigned int>(getpid());
    unsigned int count = 1024;
    if (procs_v2) {
      std::vector<NvmlProcessInfoV2> v(count);
      if (procs_v2(h, &count, v.data()) != 0) return -1;
      for (unsigned int i = 0; i < count && i < v.size(); ++i) {
        if (v[i].pid == self && v[i].used_gpu_memory != ~0ull) return static_cast<long long>(v[i].used_gpu_memory);
      }
    } else if (procs_v1) {
      std::vector<NvmlProcessInfoV1> v(count);
      if (procs_v1(h, &count, v.data()) != 0) return -1;
      for (unsigned int i = 0; i < count && i < v.size(); ++i) {
        if (v[i].pid == self && v[i].used_gpu_memory != ~0ull) return static_cast<long long>(v[i].used_gpu_memory);
      }
    }
    return -1;
  }
};

Nvml LoadNvml(const std::string& lib) {
  Nvml n;
  if (lib == "none") return n;
  Step("nvmlInit", -1);
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return n;
  auto init = reinterpret_cast<int (*)()>(dlsym(h, "nvmlInit_v2"));
  if (!init) init = reinterpret_cast<int (*)()>(dlsym(h, "nvmlInit"));
  n.handle_by_bus = reinterpret_cast<int (*)(const char*, void**)>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
  if (!n.handle_by_bus) {
    n.handle_by_bus = reinterpret_cast<int (*)(const char*, void**)>(dlsym(h, "nvmlDeviceGetHandleByPciBusId"));
  }
  for (const char* name : {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}) {
    if (!n.procs_v2) {
      n.procs_v2 = reinterpret_cast<int (*)(void*, unsigned int*, NvmlProcessInfoV2*)>(dlsym(h, name));
      if (n.procs_v2) n.procs_name = name;
    }
  }
  if (!n.procs_v2) {
    n.procs_v1 = reinterpret_cast<int (*)(void*, unsigned int*, NvmlProcessInfoV1*)>(
        dlsym(h, "nvmlDeviceGetComputeRunningProcesses"));
    if (n.procs_v1) n.procs_name = "nvmlDeviceGetComputeRunningProcesses";
  }
  n.ready = init && init() == 0 && n.handle_by_bus && (n.procs_v2 || n.procs_v1);
  return n;
}

std::string Uuid(const unsigned char* b) {
  char buf[64];
  snprintf(buf, sizeof(buf), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

}  // namespace

int RunCuda(std::string lib, std::string nvml_lib) {
  if (lib.empty()) {
    const char* env = getenv("DCU_MEMPROBE_CUDA_LIBRARY");
    lib = env && *env ? env : "libcuda.so.1";
  }
  if (nvml_lib.empty()) nvml_lib = "libnvidia-ml.so.1";
  Step("dlopen", -1);
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    Line("{\"probe\":\"dcu-memprobe\",\"runtime\":\"cuda\",\"cuda_library\":" + JsonString(lib) + "}");
    Line("{\"error\":" + JsonString(std::string("cannot load '") + lib + "': " + (e ? e : "dlopen failed")) + "}");
    return 2;
  }
  auto sym = [&](const char* name) { return dlsym(h, name); };
  auto init = reinterpret_cast<CuInit>(sym("cuInit"));
  auto driver_version = reinterpret_cast<CuDriverGetVersion>(sym("cuDriverGetVersion"));
  auto get_count = reinterpret_cast<CuDeviceGetCount>(sym("cuDeviceGetCount"));
  auto get_device = reinterpret_cast<CuDeviceGet>(sym("cuDeviceGet"));
  auto get_name = reinterpret_cast<CuDeviceGetName>(sym("cuDeviceGetName"));
  auto bus_id = reinterpret_cast<CuDeviceGetPCIBusId>(sym("cuDeviceGetPCIBusId"));
  auto get_uuid = reinterpret_cast<CuDeviceGetUuid>(sym("cuDeviceGetUuid_v2"));
  if (!get_uuid) get_uuid = reinterpret_cast<CuDeviceGetUuid>(sym("cuDeviceGetUuid"));
  auto get_attr = reinterpret_cast<CuDeviceGetAttribute>(sym("cuDeviceGetAttribute"));
  auto retain = reinterpret_cast<CuPrimaryCtxRetain>(sym("cuDevicePrimaryCtxRetain"));
  auto release = reinterpret_cast<CuPrimaryCtxRelease>(sym("cuDevicePrimaryCtxRelease_v2"));
  if (!release) release = reinterpret_cast<CuPrimaryCtxRelease>(sym("cuDevicePrimaryCtxRelease"));
  auto set_current = reinterpret_cast<CuCtxSetCurrent>(sym("cuCtxSetCurrent"));
  auto mem_info = reinterpret_cast<CuMemGetInfo>(sym("cuMemGetInfo_v2"));
  if (!mem_info) mem_info = reinterpret_cast<CuMemGetInfo>(sym("cuMemGetInfo"));
  auto error_name = reinterpret_cast<CuGetErrorName>(sym("cuGetErrorName"));
  auto err = [&](const char* call, int rc) {
    std::string s = std::string(call) + " returned " + std::to_string(rc);
    const char* n = nullptr;
    if (error_name && error_name(rc, &n) == 0 && n) s += std::string(" (") + n + ")";
    return s;
  };
  std::string missing;
  if (!init) missing += " cuInit";
  if (!get_count) missing += " cuDeviceGetCount";
  if (!get_device) missing += " cuDeviceGet";
  if (!retain) missing += " cuDevicePrimaryCtxRetain";
  if (!release) missing += " cuDevicePrimaryCtxRelease";
  if (!set_current) missing += " cuCtxSetCurrent";
  if (!mem_info) missing += " cuMemGetInfo";
  if (!missing.empty()) {
    Line("{\"probe\":\"dcu-memprobe\",\"runtime\":\"cuda\",\"cuda_library\":" + JsonString(lib) + "}");
    Line("{\"error\":" + JsonString("'" + lib + "' lacks" + missing) + "}");
    return 2;
  }
  Step("cuInit", -1);
  int rc = init(0);
  int version = 0;
  if (rc == 0 && driver_version) driver_version(&version);
  Line("{\"probe\":\"dcu-memprobe\",\"runtime\":\"cuda\",\"cuda_library\":" + JsonString(lib) +
       ",\"driver_version\":" + std::to_string(version) + "}");
  if (rc != 0) {
    // 100 = CUDA_ERROR_NO_DEVICE: the library works, there is no GPU.
    if (rc == 100) {
      Line("{\"device_count\":0}");
      Line("{\"done\":true}");
      return 0;
    }
    Line("{\"error\":" + JsonString(err("cuInit", rc)) + "}");
    return 2;
  }
  Step("cuDeviceGetCount", -1);
  int count = 0;
  rc = get_count(&count);
  if (rc != 0) {
    Line("{\"error\":" + JsonString(err("cuDeviceGetCount", rc)) + "}");
    return 2;
  }
  Line("{\"device_count\":" + std::to_string(count) + "}");
  const Nvml nvml = count > 0 ? LoadNvml(nvml_lib) : Nvml{};
  int failures = 0;
  for (int d = 0; d < count && d < 1024; ++d) {
    std::string line = "{\"index\":" + std::to_string(d);
    int dev = 0;
    Step("cuDeviceGet", d);
    rc = get_device(&dev, d);
    if (rc != 0) {
      Line(line + ",\"error\":" + JsonString(err("cuDeviceGet", rc)) + "}");
      ++failures;
      continue;
    }
    std::string bus;
    if (bus_id) {
      Step("cuDeviceGetPCIBusId", d);
      char buf[64] = {0};
      if (bus_id(buf, sizeof(buf) - 1, dev) == 0) {
        bus = buf;
        line += ",\"pci_bus\":" + JsonString(bus);
      }
    }
    if (get_name) {
      Step("cuDeviceGetName", d);
      char buf[256] = {0};
      if (get_name(buf, sizeof(buf) - 1, dev) == 0) line += ",\"name\":" + JsonString(buf);
    }
    if (get_uuid) {
      Step("cuDeviceGetUuid", d);
      unsigned char u[16] = {0};
      if (get_uuid(u, dev) == 0) line += ",\"uuid\":" + JsonString(Uuid(u));
    }
    if (get_attr) {
      Step("cuDeviceGetAttribute", d);
      int major = -1, minor = -1;
      if (get_attr(&major, kComputeCapabilityMajor, dev) == 0 && get_attr(&minor, kComputeCapabilityMinor, dev) == 0) {
        line += ",\"arch\":" + JsonString("sm_" + std::to_string(major) + std::to_string(minor));
      }
    }
    Step("cuDevicePrimaryCtxRetain", d);
    void* ctx = nullptr;
    rc = retain(&ctx, dev);
    if (rc != 0) {
      Line(line + ",\"error\":" + JsonString(err("cuDevicePrimaryCtxRetain", rc)) + "}");
      ++failures;
      continue;
    }
    Step("cuCtxSetCurrent", d);
    rc = set_current(ctx);
    size_t free_b = 0, total_b = 0;
    if (rc == 0) {
      Step("cuMemGetInfo", d);
      rc = mem_info(&free_b, &total_b);
      if (rc != 0) {
        line += ",\"error\":" + JsonString(err("cuMemGetInfo", rc));
        ++failures;
      } else {
        line += ",\"free\":" + std::to_string(free_b) + ",\"total\":" + std::to_string(total_b);
        if (!bus.empty()) {
          Step("nvmlDeviceGetComputeRunningProcesses", d);
          long long self = nvml.SelfUsed(bus);
          if (self >= 0) {
            line += ",\"self_used\":" + std::to_string(self) + ",\"self_source\":" + JsonString("nvml:" + nvml.procs_name);
          }
        }
      }
    } else {
      line += ",\"error\":" + JsonString(err("cuCtxSetCurrent", rc));
      ++failures;
    }
    set_current(nullptr);
    Step("cuDevicePrimaryCtxRelease", d);
    release(dev);
    Line(line + "}");
  }
  Line("{\"done\":true}");
  return failures ? 1 : 0;
}

}  // namespace dcu::memprobe
