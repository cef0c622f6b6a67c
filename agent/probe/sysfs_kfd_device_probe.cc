#include "agent/probe/sysfs_kfd_device_probe.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace dcu::agent {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == EACCES || errno == EPERM) {
      return absl::PermissionDeniedError(absl::StrCat("cannot read '", path, "': ", strerror(errno)));
    }
    return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    out.push_back(e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    int ia = 0, ib = 0;
    if (absl::SimpleAtoi(a, &ia) && absl::SimpleAtoi(b, &ib)) return ia < ib;
    return a < b;
  });
  return out;
}

// Parses "key value" lines. Returns INVALID_ARGUMENT naming the file and line
// when a value is not an unsigned integer.
absl::StatusOr<std::map<std::string, uint64_t>> ParseProperties(const std::string& path,
                                                                const std::string& text) {
  std::map<std::string, uint64_t> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t v = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' line ", line_no, ": expected 'name <unsigned integer>', got '",
                       line.substr(0, 80), "'"));
    }
    out[std::string(parts[0])] = v;
  }
  return out;
}

// gfx_target_version = major*10000 + minor*100 + stepping; the stepping is
// printed in hex in the ISA name (90010 -> gfx90a).
std::string DecodeGfxTargetVersion(uint64_t v) {
  if (v == 0) return "";
  uint64_t major = v / 10000, minor = (v / 100) % 100, step = v % 100;
  return absl::StrFormat("gfx%d%d%x", major, minor, step);
}

}  // namespace

absl::StatusOr<std::vector<dcufleet::v1::Device>> SysfsKfdDeviceProbe::Enumerate() {
  const std::string nodes_dir = absl::StrCat(root_, "/sys/class/kfd/kfd/topology/nodes");
  struct stat st;
  if (stat(nodes_dir.c_str(), &st) != 0) {
    if (errno == EACCES || errno == EPERM) {
      return absl::PermissionDeniedError(absl::StrCat("cannot read '", nodes_dir, "': ", strerror(errno)));
    }
    return absl::UnavailableError(absl::StrCat("no KFD topology at '", nodes_dir, "'"));
  }
  std::vector<dcufleet::v1::Device> out;
  int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (const std::string& node : ListDir(nodes_dir)) {
    std::string props_path = absl::StrCat(nodes_dir, "/", node, "/properties");
    auto text = ReadFile(props_path);
    if (!text.ok()) return text.status();
    auto props = ParseProperties(props_path, *text);
    if (!props.ok()) return props.status();
    // CPU nodes have no SIMDs; skip them.
    if ((*props)["simd_count"] == 0) continue;
    dcufleet::v1::Device dev;
    dev.set_index(static_cast<int>(out.size()));
    uint64_t vendor = (*props)["vendor_id"];
    dev.set_pci_vendor_id(static_cast<uint32_t>(vendor));
    dev.set_pci_device_id(static_cast<uint32_t>((*props)["device_id"]));
    dev.set_vendor(vendor == 0x1d94 ? "hygon" : vendor == 0x1002 ? "amd" : "unknown");
    std::string arch = DecodeGfxTargetVersion((*props)["gfx_target_version"]);
    if (!arch.empty()) {
      dev.set_arch(arch);
      dev.set_arch_source("kfd:gfx_target_version");
    }
    uint64_t loc = (*props)["location_id"];
    dev.set_pci_bus(absl::StrFormat("%04x:%02x:%02x.%x", (*props)["domain"], (loc >> 8) & 0xff,
                                    (loc >> 3) & 0x1f, loc & 0x7));
    dev.set_drm_render_minor(static_cast<int>((*props)["drm_render_minor"]));
    if ((*props)["unique_id"]) dev.set_unique_id(absl::StrCat((*props)["unique_id"]));
    auto gpu_id = ReadFile(absl::StrCat(nodes_dir, "/", node, "/gpu_id"));
    uint32_t gid = 0;
    if (gpu_id.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*gpu_id), &gid)) {
      dev.set_kfd_gpu_id(gid);
    }
    auto name = ReadFile(absl::StrCat(nodes_dir, "/", node, "/name"));
    if (name.ok()) dev.set_product_name(std::string(absl::StripAsciiWhitespace(*name)));
    // Total memory from the first memory bank.
    auto bank = ReadFile(absl::StrCat(nodes_dir, "/", node, "/mem_banks/0/properties"));
    if (bank.ok()) {
      auto bp = ParseProperties(absl::StrCat(nodes_dir, "/", node, "/mem_banks/0/properties"), *bank);
      if (bp.ok() && (*bp)["size_in_bytes"]) {
        dev.mutable_total()->set_bytes(static_cast<int64_t>((*bp)["size_in_bytes"]));
        dev.mutable_total()->set_source("kfd:mem_banks/0/properties");
        dev.mutable_total()->set_valid(true);
        dev.mutable_total()->set_read_at_ms(now_ms);
      }
    }
    out.push_back(std::move(dev));
  }
  if (out.empty()) return absl::NotFoundError(absl::StrCat("no GPU nodes under '", nodes_dir, "'"));
  return out;
}

}  // namespace dcu::agent
