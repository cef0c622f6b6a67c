#pragma once

// Output helpers shared by the HIP and CUDA paths of dcu-memprobe (JSON Lines
// on stdout, progress on stderr). Header-only: the helper links nothing but
// libdl.
#include <cstdio>
#include <string>

namespace dcu::memprobe {

inline std::string JsonString(const std::string& s) {
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

inline void Line(const std::string& json) {
  fputs(json.c_str(), stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

inline void Step(const char* what, int device) {
  fprintf(stderr, "step %s device %d\n", what, device);
  fflush(stderr);
}

// The CUDA path (memprobe_cuda.cc). Returns the exit code.
int RunCuda(std::string lib, std::string nvml_lib);

}  // namespace dcu::memprobe
