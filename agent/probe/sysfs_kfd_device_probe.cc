#include "agent/probe/sysfs_kfd_device_probe.h"

#include <sys/stat.h>

#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/probe/findings.h"
#include "agent/probe/memory_reading.h"
#include "common/arch.h"
#include "common/fs_util.h"

namespace dcu::agent {
namespace {

using common::JoinRoot;
using common::ReadSmallFile;
using dcufleet::v1::Device;
using dcufleet::v1::Finding;

constexpr char kTopology[] = "sys/class/kfd/kfd/topology/nodes";
constexpr char kDrm[] = "sys/class/drm";

struct Properties {
  std::map<std::string, uint64_t> values;
  bool Has(const std::string& k) const { return values.count(k) > 0; }
  uint64_t Get(const std::string& k) const {
    auto it = values.find(k);
    return it == values.end() ? 0 : it->second;
  }
};

// Parses "name value" lines. Bad lines become findings (naming file and
// line) instead of failing the whole file: one odd key must not hide a device.
Properties ParseProperties(const std::string& path, absl::string_view text,
                           std::vector<Finding>* findings) {
  Properties out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    uint64_t v = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &v)) {
      findings->push_back(MakeFinding(
          kWarning, kFileMalformed, path,
          absl::StrCat("'", path, "' line ", line_no, ": expected 'name <unsigned integer>', got '",
                       line.substr(0, 80), "'")));
      continue;
    }
    out.values[std::string(parts[0])] = v;
  }
  return out;
}

std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Parses "0x1d94" (sysfs vendor/device files).
std::optional<uint32_t> ParseHexFile(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  absl::ConsumePrefix(&s, "0x");
  uint32_t v = 0;
  if (s.empty() || !absl::SimpleHexAtoi(s, &v)) return std::nullopt;
  return v;
}

// "PCI_SLOT_NAME=0000:1b:00.0" from a uevent file.
std::string PciSlotFromUevent(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, "PCI_SLOT_NAME=")) return absl::AsciiStrToLower(Trim(line));
  }
  return "";
}

struct DrmCard {
  std::string name;        // "card1"
  std::string device_dir;  // <root>/sys/class/drm/card1/device
  std::string pci_slot;    // "0000:1b:00.0"
};

std::vector<DrmCard> ListDrmCards(const std::string& root) {
  std::vector<DrmCard> cards;
  auto names = common::ListDir(JoinRoot(root, kDrm));
  if (!names.ok()) return cards;
  for (const std::string& n : *names) {
    absl::string_view rest = n;
    uint32_t num = 0;
    if (!absl::ConsumePrefix(&rest, "card") || !absl::SimpleAtoi(rest, &num)) continue;  // skip card0-DP-1
    DrmCard c;
    c.name = n;
    c.device_dir = JoinRoot(root, absl::StrCat(kDrm, "/", n, "/device"));
    auto uevent = ReadSmallFile(c.device_dir + "/uevent");
    if (uevent.ok()) c.pci_slot = PciSlotFromUevent(*uevent);
    cards.push_back(std::move(c));
  }
  return cards;
}

// Reads one integer sysfs file into `out`. A missing file is silent (the
// caller decides), an unreadable or malformed one becomes a device finding.
bool ReadIntFile(const std::string& path, int64_t* out, Device* dev) {
  auto text = ReadSmallFile(path, 256);
  if (!text.ok()) {
    if (absl::IsPermissionDenied(text.status())) {
      *dev->add_findings() = MakeFinding(kWarning, kFileUnreadable, path, text.status().message());
    }
    return false;
  }
  if (!absl::SimpleAtoi(Trim(*text), out) || *out < 0) {
    *dev->add_findings() = MakeFinding(kWarning, kFileMalformed, path,
                                       absl::StrCat("'", path, "': expected a byte count, got '",
                                                    Trim(text->substr(0, 64)), "'"));
    return false;
  }
  return true;
}

}  // namespace

std::string ReadDriverVersion(const std::string& root) {
  for (const char* module : {"hycu", "hydcu", "amdgpu"}) {
    auto v = ReadSmallFile(JoinRoot(root, absl::StrCat("sys/module/", module, "/version")), 256);
    if (v.ok() && !Trim(*v).empty()) return absl::StrCat(module, " ", Trim(*v));
  }
  return "";
}

absl::StatusOr<std::vector<Device>> SysfsKfdDeviceProbe::Enumerate() {
  auto report = Probe();
  if (!report.ok()) return report.status();
  return std::move(report->devices);
}

absl::StatusOr<ProbeReport> SysfsKfdDeviceProbe::Probe() {
  const std::string nodes_dir = JoinRoot(root_, kTopology);
  auto nodes = common::ListDir(nodes_dir);
  if (!nodes.ok()) {
    if (absl::IsPermissionDenied(nodes.status())) {
      return absl::PermissionDeniedError(absl::StrCat(
          nodes.status().message(),
          " (inside a container the KFD topology needs /sys/class/kfd mounted readable)"));
    }
    // Say what else is there: a DRM card without KFD means the compute
    // driver side is missing, not that the node has no accelerator.
    std::vector<DrmCard> cards = ListDrmCards(root_);
    std::string hint;
    if (!cards.empty()) {
      hint = absl::StrCat("; ", cards.size(), " DRM card(s) present (", cards[0].name,
                          cards[0].pci_slot.empty() ? "" : absl::StrCat(" ", cards[0].pci_slot),
                          cards.size() > 1 ? ", ..." : "", "): is the KFD (amdgpu/hydcu compute) driver loaded?");
    }
    return absl::UnavailableError(absl::StrCat("no KFD topology at '", nodes_dir, "'", hint));
  }

  ProbeReport report;
  report.driver_version = ReadDriverVersion(root_);
  const int64_t now_ms = absl::ToUnixMillis(clock_->Now());
  std::vector<DrmCard> cards = ListDrmCards(root_);

  for (const std::string& node : *nodes) {
    const std::string node_dir = absl::StrCat(nodes_dir, "/", node);
    const std::string props_path = node_dir + "/properties";
    auto text = ReadSmallFile(props_path);
    if (!text.ok()) {
      report.findings.push_back(MakeFinding(absl::IsPermissionDenied(text.status()) ? kError : kWarning,
                                            absl::IsPermissionDenied(text.status()) ? kFileUnreadable : kFileMissing,
                                            props_path, text.status().message()));
      continue;
    }
    Device dev;
    std::vector<Finding> parse_findings;
    Properties props = ParseProperties(props_path, *text, &parse_findings);
    // CPU nodes have no SIMDs.
    if (props.Get("simd_count") == 0) continue;
    for (auto& f : parse_findings) *dev.add_findings() = std::move(f);

    dev.set_index(static_cast<int>(report.devices.size()));
    uint32_t node_num = 0;
    if (absl::SimpleAtoi(node, &node_num)) dev.set_kfd_node(static_cast<int>(node_num));
    uint32_t vendor = static_cast<uint32_t>(props.Get("vendor_id"));
    uint32_t device_id = static_cast<uint32_t>(props.Get("device_id"));

    // PCI address: location_id = bus << 8 | device << 3 | function.
    uint64_t loc = props.Get("location_id");
    std::string pci = absl::StrFormat("%04x:%02x:%02x.%x", props.Get("domain"), (loc >> 8) & 0xff,
                                      (loc >> 3) & 0x1f, loc & 0x7);
    dev.set_pci_bus(pci);
    int minor = static_cast<int>(props.Get("drm_render_minor"));
    dev.set_drm_render_minor(minor);

    // Match a DRM card: render minor first, PCI address second.
    const DrmCard* card = nullptr;
    if (props.Has("drm_render_minor")) {
      std::string render = absl::StrCat("renderD", minor);
      for (const DrmCard& c : cards) {
        if (IsDir(absl::StrCat(c.device_dir, "/drm/", render))) {
          card = &c;
          break;
        }
      }
      if (!card) {
        auto uevent = ReadSmallFile(JoinRoot(root_, absl::StrCat(kDrm, "/", render, "/device/uevent")));
        std::string slot = uevent.ok() ? PciSlotFromUevent(*uevent) : "";
        for (const DrmCard& c : cards) {
          if (!slot.empty() && c.pci_slot == slot) {
            card = &c;
            break;
          }
        }
      }
      if (card) dev.set_drm_match("render_minor");
    }
    if (!card) {
      for (const DrmCard& c : cards) {
        if (c.pci_slot == pci) {
          card = &c;
          dev.set_drm_match("pci_bus");
          break;
        }
      }
    }
    if (card) {
      dev.set_drm_card(card->name);
      if (!card->pci_slot.empty() && card->pci_slot != pci) {
        *dev.add_findings() = MakeFinding(kWarning, kDrmNotMatched, card->device_dir,
                                          absl::StrCat("KFD node ", node, " at ", pci, " matched ", card->name,
                                                       " by render minor but the card is at ", card->pci_slot));
      }
      if (vendor == 0) {
        auto v = ReadSmallFile(card->device_dir + "/vendor", 64);
        if (v.ok()) vendor = ParseHexFile(*v).value_or(0);
      }
      if (device_id == 0) {
        auto d = ReadSmallFile(card->device_dir + "/device", 64);
        if (d.ok()) device_id = ParseHexFile(*d).value_or(0);
      }
    } else {
      *dev.add_findings() = MakeFinding(
          kWarning, kDrmNotMatched, absl::StrCat(kDrm),
          absl::StrCat("no DRM card for KFD node ", node, " (render minor ", minor, ", PCI ", pci,
                       "): host-view memory (mem_info_vram_*) unavailable"));
    }
    dev.set_pci_vendor_id(vendor);
    dev.set_pci_device_id(device_id);
    std::string vname = VendorName(vendor);
    dev.set_vendor(vname.empty() ? absl::StrFormat("0x%04x", vendor) : vname);

    // Arch from gfx_target_version.
    if (!props.Has("gfx_target_version")) {
      *dev.add_findings() = MakeFinding(
          kInfo, kOldKernel, props_path,
          absl::StrCat("'", props_path, "' has no gfx_target_version (kernel older than 5.9?); arch from another source"));
    } else {
      auto arch = common::DecodeGfxTargetVersion(props.Get("gfx_target_version"));
      if (arch.ok()) {
        dev.set_arch(*arch);
        dev.set_arch_source("kfd:gfx_target_version");
      } else {
        *dev.add_findings() = MakeFinding(
            kWarning, kArchRejected, "kfd:gfx_target_version",
            absl::StrCat("rejected gfx_target_version ", props.Get("gfx_target_version"), " in '", props_path,
                         "': ", arch.status().message()));
      }
    }

    // gpu_id keys /sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>.
    auto gpu_id = ReadSmallFile(node_dir + "/gpu_id", 64);
    uint32_t gid = 0;
    if (gpu_id.ok() && absl::SimpleAtoi(Trim(*gpu_id), &gid)) {
      dev.set_kfd_gpu_id(gid);
    } else {
      *dev.add_findings() = MakeFinding(
          kInfo, gpu_id.ok() || !absl::IsPermissionDenied(gpu_id.status()) ? kFileMissing : kFileUnreadable,
          node_dir + "/gpu_id", "no KFD gpu_id: per-process VRAM (kfd proc vram_<gpu_id>) cannot be attributed");
    }

    // Product name: the data table by PCI id, else the KFD node name.
    if (auto m = products_->ByPciId(vendor, device_id)) {
      dev.set_product_name(m->name);
      dev.set_product_name_source(m->source);
    } else {
      auto name = ReadSmallFile(node_dir + "/name", 256);
      std::string n = name.ok() ? Trim(*name) : "";
      // "ip discovery" is what MI300-class kernels write, not a product.
      if (!n.empty() && n != "ip discovery") {
        dev.set_product_name(n);
        dev.set_product_name_source("kfd:name");
      }
    }

    // Unique id: the DRM file (hex) or KFD's decimal property in hex.
    if (card) {
      auto uid = ReadSmallFile(card->device_dir + "/unique_id", 128);
      if (uid.ok() && !Trim(*uid).empty()) dev.set_unique_id(Trim(*uid));
    }
    if (dev.unique_id().empty() && props.Get("unique_id") != 0) {
      dev.set_unique_id(absl::StrFormat("%016x", props.Get("unique_id")));
    }

    // Total: KFD frame-buffer banks, else DRM, else local_mem_size.
    int64_t bank_total = 0;
    std::string bank_source;
    auto banks = common::ListDir(node_dir + "/mem_banks");
    if (banks.ok()) {
      for (const std::string& b : *banks) {
        std::string bp_path = absl::StrCat(node_dir, "/mem_banks/", b, "/properties");
        auto bt = ReadSmallFile(bp_path);
        if (!bt.ok()) {
          if (absl::IsPermissionDenied(bt.status())) {
            *dev.add_findings() = MakeFinding(kWarning, kFileUnreadable, bp_path, bt.status().message());
          }
          continue;
        }
        std::vector<Finding> bf;
        Properties bprops = ParseProperties(bp_path, *bt, &bf);
        for (auto& f : bf) *dev.add_findings() = std::move(f);
        // HSA heap types 1 and 2 are the public and private frame buffer.
        uint64_t heap = bprops.Get("heap_type");
        if (heap == 1 || heap == 2) {
          bank_total += static_cast<int64_t>(bprops.Get("size_in_bytes"));
          bank_source = absl::StrCat("kfd:nodes/", node, "/mem_banks/", b, "/properties");
        }
      }
    }
    int64_t drm_total = 0, drm_used = 0;
    bool have_drm_total = card && ReadIntFile(card->device_dir + "/mem_info_vram_total", &drm_total, &dev);
    bool have_drm_used = card && ReadIntFile(card->device_dir + "/mem_info_vram_used", &drm_used, &dev);
    if (bank_total > 0) {
      *dev.mutable_total() = MakeReading(bank_total, bank_source, now_ms);
    } else if (have_drm_total && drm_total > 0) {
      *dev.mutable_total() = MakeReading(drm_total, absl::StrCat("sysfs:", card->name, "/device/mem_info_vram_total"), now_ms);
    } else if (props.Get("local_mem_size") > 0) {
      *dev.mutable_total() = MakeReading(static_cast<int64_t>(props.Get("local_mem_size")),
                                     absl::StrCat("kfd:nodes/", node, "/properties local_mem_size"), now_ms);
    }

    // Host view used: DRM mem_info_vram_used, else KFD used_memory.
    if (have_drm_used) {
      *dev.mutable_host_used() = MakeReading(drm_used, absl::StrCat("sysfs:", card->name, "/device/mem_info_vram_used"), now_ms);
    } else {
      std::string um_path = node_dir + "/mem_banks/0/used_memory";
      int64_t used = 0;
      if (ReadIntFile(um_path, &used, &dev)) {
        *dev.mutable_host_used() = MakeReading(used, absl::StrCat("kfd:nodes/", node, "/mem_banks/0/used_memory"), now_ms);
      }
    }
    if (dev.total().valid() && dev.host_used().valid()) {
      *dev.mutable_host_free() =
          MakeReading(std::max<int64_t>(0, dev.total().bytes() - dev.host_used().bytes()),
                  absl::StrCat("derived:", dev.total().source(), " - ", dev.host_used().source()), now_ms);
    }
    report.devices.push_back(std::move(dev));
  }
  if (report.devices.empty()) {
    return absl::NotFoundError(absl::StrCat("no GPU nodes under '", nodes_dir, "'"));
  }
  return report;
}

}  // namespace dcu::agent
