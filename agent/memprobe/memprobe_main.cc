// dcu-memprobe: the device view of accelerator memory, from a short-lived
// process so the agent never holds a device context and a hung runtime can
// only hang this helper (the agent kills it after a timeout).
//
// --runtime hip (default): it dlopens libamdhip64 (never links it), and for
// each visible device calls hipSetDevice + hipMemGetInfo,
// hipDeviceGetPCIBusId, hipDeviceGetName and hipGetDeviceProperties (for the
// gcnArchName).
// --runtime cuda: memprobe_cuda.cc (libcuda.so.1: cuInit, a context per
// device, cuMemGetInfo).
// Output is JSON Lines on stdout, flushed line by line so that the devices
// measured before a hang still reach the agent:
//   {"probe":"dcu-memprobe","runtime":"hip","hip_library":"/opt/dtk/lib/libamdhip64.so"}
//   {"device_count":8}
//   {"index":0,"pci_bus":"0000:1b:00.0","name":"K100_AI","arch":"gfx928","free":...,"total":...}
//   {"index":1,"error":"hipMemGetInfo returned 2"}
//   {"done":true}
// Progress ("step ...") goes to stderr, so a timeout can name the call that
// hung. Exit 0 when every device answered, 1 when some did not, 2 when the
// library could not be used at all ({"error":...} on stdout).
//
// Flags: --runtime hip|cuda; --hip_library PATH (else
// $DCU_MEMPROBE_HIP_LIBRARY, else "libamdhip64.so" through the dynamic
// loader's search path); --cuda_library PATH (else
// $DCU_MEMPROBE_CUDA_LIBRARY, else "libcuda.so.1"); --nvml_library PATH or
// "none" (CUDA only: the helper's own context size, else
// "libnvidia-ml.so.1").
// Note: the probe's own context takes some device memory; the free figure it
// reports is therefore slightly below what a fresh process sees.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/memprobe/memprobe_util.h"

namespace {

using dcu::memprobe::JsonString;
using dcu::memprobe::Line;
using dcu::memprobe::Step;

using HipGetDeviceCount = int (*)(int*);
using HipSetDevice = int (*)(int);
using HipMemGetInfo = int (*)(size_t*, size_t*);
using HipDeviceGetPCIBusId = int (*)(char*, int, int);
using HipDeviceGetName = int (*)(char*, int, int);
using HipGetDeviceProperties = int (*)(void*, int);

// hipDeviceProp_t changed layout across HIP releases; rather than bind to
// one, scan the filled buffer for the NUL-terminated "gfx..." string that is
// gcnArchName. The agent validates whatever comes back.
std::string FindArch(const std::vector<char>& buf) {
  for (size_t i = 0; i + 4 < buf.size(); ++i) {
    if ((i == 0 || buf[i - 1] == '\0') && buf[i] == 'g' && buf[i + 1] == 'f' && buf[i + 2] == 'x') {
      size_t end = i;
      while (end < buf.size() && buf[end] != '\0' && end - i < 64) ++end;
      return std::string(buf.data() + i, end - i);
    }
  }
  return "";
}

}  // namespace

int RunHip(std::string lib) {
  if (lib.empty()) {
    const char* env = getenv("DCU_MEMPROBE_HIP_LIBRARY");
    lib = env && *env ? env : "libamdhip64.so";
  }
  Line("{\"probe\":\"dcu-memprobe\",\"runtime\":\"hip\",\"hip_library\":" + JsonString(lib) + "}");
  Step("dlopen", -1);
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    Line("{\"error\":" + JsonString(std::string("cannot load '") + lib + "': " + (e ? e : "dlopen failed")) + "}");
    return 2;
  }
  auto get_count = reinterpret_cast<HipGetDeviceCount>(dlsym(h, "hipGetDeviceCount"));
  auto set_device = reinterpret_cast<HipSetDevice>(dlsym(h, "hipSetDevice"));
  auto mem_info = reinterpret_cast<HipMemGetInfo>(dlsym(h, "hipMemGetInfo"));
  auto bus_id = reinterpret_cast<HipDeviceGetPCIBusId>(dlsym(h, "hipDeviceGetPCIBusId"));
  auto get_name = reinterpret_cast<HipDeviceGetName>(dlsym(h, "hipDeviceGetName"));
  auto get_props = reinterpret_cast<HipGetDeviceProperties>(dlsym(h, "hipGetDevicePropertiesR0600"));
  if (!get_props) get_props = reinterpret_cast<HipGetDeviceProperties>(dlsym(h, "hipGetDeviceProperties"));
  if (!get_count || !set_device || !mem_info) {
    std::string missing;
    if (!get_count) missing += " hipGetDeviceCount";
    if (!set_device) missing += " hipSetDevice";
    if (!mem_info) missing += " hipMemGetInfo";
    Line("{\"error\":" + JsonString("'" + lib + "' lacks" + missing) + "}");
    return 2;
  }
  Step("hipGetDeviceCount", -1);
  int count = 0;
  int rc = get_count(&count);
  if (rc != 0) {
    Line("{\"error\":" + JsonString("hipGetDeviceCount returned " + std::to_string(rc)) + "}");
    return 2;
  }
  Line("{\"device_count\":" + std::to_string(count) + "}");
  int failures = 0;
  for (int d = 0; d < count && d < 1024; ++d) {
    std::string line = "{\"index\":" + std::to_string(d);
    if (bus_id) {
      Step("hipDeviceGetPCIBusId", d);
      char buf[64] = {0};
      if (bus_id(buf, sizeof(buf) - 1, d) == 0) line += ",\"pci_bus\":" + JsonString(buf);
    }
    if (get_name) {
      Step("hipDeviceGetName", d);
      char buf[256] = {0};
      if (get_name(buf, sizeof(buf) - 1, d) == 0) line += ",\"name\":" + JsonString(buf);
    }
    if (get_props) {
      Step("hipGetDeviceProperties", d);
      std::vector<char> props(64 * 1024, '\0');
      if (get_props(props.data(), d) == 0) {
        std::string arch = FindArch(props);
        if (!arch.empty()) line += ",\"arch\":" + JsonString(arch);
      }
    }
    Step("hipSetDevice", d);
    rc = set_device(d);
    if (rc != 0) {
      Line(line + ",\"error\":" + JsonString("hipSetDevice returned " + std::to_string(rc)) + "}");
      ++failures;
      continue;
    }
    Step("hipMemGetInfo", d);
    size_t free_b = 0, total_b = 0;
    rc = mem_info(&free_b, &total_b);
    if (rc != 0) {
      Line(line + ",\"error\":" + JsonString("hipMemGetInfo returned " + std::to_string(rc)) + "}");
      ++failures;
      continue;
    }
    Line(line + ",\"free\":" + std::to_string(free_b) + ",\"total\":" + std::to_string(total_b) + "}");
  }
  Line("{\"done\":true}");
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  std::string runtime = "hip", hip_lib, cuda_lib, nvml_lib;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag, std::string* out) {
      std::string f = flag;
      if (a == f && i + 1 < argc) {
        *out = argv[++i];
        return true;
      }
      if (a.rfind(f + "=", 0) == 0) {
        *out = a.substr(f.size() + 1);
        return true;
      }
      return false;
    };
    if (value("--runtime", &runtime) || value("--hip_library", &hip_lib) || value("--cuda_library", &cuda_lib) ||
        value("--nvml_library", &nvml_lib)) {
      continue;
    }
    if (a == "--help" || a == "-h") {
      fputs("usage: dcu-memprobe [--runtime hip|cuda] [--hip_library PATH] [--cuda_library PATH]\n"
            "                    [--nvml_library PATH|none]\n",
            stdout);
      return 0;
    }
    fprintf(stderr, "dcu-memprobe: unknown argument '%s'\n", a.c_str());
    return 2;
  }
  if (runtime == "hip") return RunHip(hip_lib);
  if (runtime == "cuda") return dcu::memprobe::RunCuda(cuda_lib, nvml_lib);
  fprintf(stderr, "dcu-memprobe: --runtime must be hip or cuda, got '%s'\n", runtime.c_str());
  return 2;
}
