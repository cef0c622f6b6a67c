// dcu-memprobe: the device view of accelerator memory, from a short-lived
// process so the agent never holds a device context and a hung runtime can
// only hang this helper (the agent kills it after a timeout).
//
// It dlopens libamdhip64 (never links it), and for each visible device calls
// hipSetDevice + hipMemGetInfo, hipDeviceGetPCIBusId, hipDeviceGetName and
// hipGetDeviceProperties (for the gcnArchName). Output is JSON Lines on
// stdout, flushed line by line so that the devices measured before a hang
// still reach the agent:
//   {"probe":"dcu-memprobe","hip_library":"/opt/dtk/lib/libamdhip64.so"}
//   {"device_count":8}
//   {"index":0,"pci_bus":"0000:1b:00.0","name":"K100_AI","arch":"gfx928","free":...,"total":...}
//   {"index":1,"error":"hipMemGetInfo returned 2"}
//   {"done":true}
// Progress ("step ...") goes to stderr, so a timeout can name the call that
// hung. Exit 0 when every device answered, 1 when some did not, 2 when the
// library could not be used at all ({"error":...} on stdout).
//
// Flags: --hip_library PATH (else $DCU_MEMPROBE_HIP_LIBRARY, else
// "libamdhip64.so" through the dynamic loader's search path).
// Note: the probe's own HIP context takes some device memory; the free
// figure it reports is therefore slightly below what a fresh process sees.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using HipGetDeviceCount = int (*)(int*);
using HipSetDevice = int (*)(int);
using HipMemGetInfo = int (*)(size_t*, size_t*);
using HipDeviceGetPCIBusId = int (*)(char*, int, int);
using HipDeviceGetName = int (*)(char*, int, int);
using HipGetDeviceProperties = int (*)(void*, int);

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void Line(const std::string& json) {
  fputs(json.c_str(), stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

void Step(const char* what, int device) {
  fprintf(stderr, "step %s device %d\n", what, device);
  fflush(stderr);
}

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

int main(int argc, char** argv) {
  std::string lib;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--hip_library" && i + 1 < argc) {
      lib = argv[++i];
    } else if (a.rfind("--hip_library=", 0) == 0) {
      lib = a.substr(strlen("--hip_library="));
    } else if (a == "--help" || a == "-h") {
      fputs("usage: dcu-memprobe [--hip_library PATH]\n", stdout);
      return 0;
    } else {
      fprintf(stderr, "dcu-memprobe: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (lib.empty()) {
    const char* env = getenv("DCU_MEMPROBE_HIP_LIBRARY");
    lib = env && *env ? env : "libamdhip64.so";
  }
  Line("{\"probe\":\"dcu-memprobe\",\"hip_library\":" + JsonString(lib) + "}");
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
