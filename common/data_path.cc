#include "common/data_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace dcu::common {

std::string ExecutableDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string p(buf, static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

std::string FindDataPath(const std::string& flag_value, const char* env_var,
                         const std::string& relative) {
  if (!flag_value.empty()) return flag_value;
  if (env_var) {
    const char* e = std::getenv(env_var);
    if (e && *e) return e;
  }
  std::string exe = ExecutableDir();
  std::vector<std::string> candidates = {"/etc/dcufleet/" + relative};
  if (!exe.empty()) {
    candidates.push_back(exe + "/../share/dcufleet/" + relative);
    candidates.push_back(exe + "/../../deploy/" + relative);
  }
  for (const auto& c : candidates) {
    struct stat st;
    if (stat(c.c_str(), &st) == 0) return c;
  }
  return "";
}

}  // namespace dcu::common
