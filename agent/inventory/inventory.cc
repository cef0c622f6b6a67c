#include "agent/inventory/inventory.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <ostream>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "agent/inventory/inventory_merger.h"
#include "agent/probe/findings.h"
#include "agent/probe/sysfs_kfd_device_probe.h"
#include "agent/procscan/proc_scanner.h"
#include "common/enum_names.h"
#include "common/holder_class.h"
#include "common/fs_util.h"
#include "common/proc_stat.h"
#include "common/units.h"

namespace dcu::agent {
namespace {

using common::HumanBytes;
using dcufleet::v1::NodeInventory;

std::string ReadTrimmed(const std::string& path) {
  auto t = common::ReadSmallFile(path, 4096);
  return t.ok() ? std::string(absl::StripAsciiWhitespace(*t)) : "";
}

// The one place a batch job's grant narrows the report: devices whose index
// the job was not given are dropped (with their holders: another job's
// processes are not this agent's business), an allocated index the node
// does not have is a warning, and the report names the job.
void KeepAllocatedDevices(const dcufleet::v1::NodeAllocation& a, std::vector<dcufleet::v1::Device>* devices,
                          NodeInventory* inv) {
  absl::flat_hash_set<int> allowed(a.device_indices().begin(), a.device_indices().end());
  absl::flat_hash_set<int> present;
  const size_t before = devices->size();
  std::vector<dcufleet::v1::Device> kept;
  for (auto& d : *devices) {
    present.insert(d.index());
    if (allowed.contains(d.index())) kept.push_back(std::move(d));
  }
  *devices = std::move(kept);
  std::vector<int> missing;
  for (int i : a.device_indices()) {
    if (!present.contains(i)) missing.push_back(i);
  }
  const std::string job = absl::StrCat(a.scheduler(), " job '", a.job_id(), "'");
  if (!missing.empty()) {
    *inv->add_findings() = MakeFinding(
        kWarning, "allocated_device_missing", "allocation",
        absl::StrCat(job, " was given device(s) ", absl::StrJoin(missing, ","), " (", a.devices_from(),
                     ") that this node does not have; gres.conf may list devices in another order than the runtime"));
  }
  inv->add_probe_log(absl::StrCat("allocation: ", job, ": ", devices->size(), " of ", before,
                                  " device(s) reported, indices [", absl::StrJoin(a.device_indices(), ","),
                                  "] from ", a.devices_from().empty() ? "nowhere" : a.devices_from()));
  *inv->mutable_allocation() = a;
}

}  // namespace

absl::StatusOr<std::unique_ptr<InventoryCollector>> InventoryCollector::Create(InventoryOptions options) {
  static const DeviceProbeRegistry* builtin = new DeviceProbeRegistry(DeviceProbeRegistry::WithBuiltins());
  const DeviceProbeRegistry* registry = options.registry ? options.registry : builtin;
  for (size_t i = 0; i < options.probes.size(); ++i) {
    if (!registry->Has(options.probes[i])) {
      return absl::InvalidArgumentError(absl::StrCat("unknown device probe '", options.probes[i], "' (known: ",
                                                     absl::StrJoin(registry->Names(), ", "), ")"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (options.probes[j] == options.probes[i]) {
        return absl::InvalidArgumentError(absl::StrCat("device probe '", options.probes[i], "' listed twice"));
      }
    }
  }
  std::unique_ptr<InventoryCollector> c(new InventoryCollector(options));
  ProbeContext ctx;
  ctx.root = options.root;
  ctx.products = options.products;
  ctx.clock = options.clock;
  ctx.runner = options.runner;
  ctx.memprobe_path = options.memprobe_path;
  ctx.hip_library = options.hip_library;
  ctx.memprobe_timeout = options.memprobe_timeout;
  ctx.memprobe_ttl = options.memprobe_ttl;
  ctx.rocm_smi_dirs = options.rocm_smi_dirs;
  ctx.nvml_library = options.nvml_library;
  ctx.cuda_library = options.cuda_library;
  for (const std::string& name : options.probes) {
    Backend b;
    b.name = name;
    auto p = registry->Create(name, ctx);
    if (p.ok()) {
      b.probe = std::move(*p);
    } else {
      b.create_status = p.status();
    }
    absl::MutexLock lock(&c->mu_);
    c->backends_.push_back(std::move(b));
  }
  return c;
}

void InventoryCollector::InvalidateDeviceView() {
  absl::MutexLock lock(&mu_);
  InvalidateDeviceViewLocked();
}

void InventoryCollector::InvalidateDeviceViewLocked() {
  for (auto& b : backends_) {
    if (b.probe) b.probe->Invalidate();
  }
}

void InventoryCollector::SetInstances(const std::vector<dcufleet::v1::InstanceStatus>& instances) {
  absl::MutexLock lock(&mu_);
  using dcufleet::v1::InstancePhase;
  auto ended = [](InstancePhase p) {
    return p == dcufleet::v1::INSTANCE_FAILED || p == dcufleet::v1::INSTANCE_STOPPED;
  };
  absl::flat_hash_set<std::string> live;
  absl::flat_hash_map<std::string, InstancePhase> phases;
  bool moved = false;
  for (const auto& st : instances) {
    if (st.phase() != dcufleet::v1::INSTANCE_STOPPED) live.insert(st.instance_id());
    phases[st.instance_id()] = st.phase();
    auto was = instance_phases_.find(st.instance_id());
    // Became Ready: its memory is all allocated now.
    if (st.phase() == dcufleet::v1::INSTANCE_READY &&
        (was == instance_phases_.end() || was->second != dcufleet::v1::INSTANCE_READY)) {
      moved = true;
    }
  }
  // Ended or gone, having been alive: what it held is back.
  for (const auto& [id, phase] : instance_phases_) {
    if (ended(phase)) continue;
    auto now = phases.find(id);
    if (now == phases.end() || ended(now->second)) moved = true;
  }
  // Starting and loading move no figure worth a probe: the memory grows
  // until Ready, and the view's own expiry (memprobe_ttl) covers a long load.
  if (moved) InvalidateDeviceViewLocked();
  instance_phases_ = std::move(phases);
  options_.live_instance_ids = std::move(live);
}

NodeInventory InventoryCollector::Collect() {
  absl::MutexLock lock(&mu_);
  const int every = options_.full_scan_every;
  bool full = every == 1 || (every > 1 && collects_ % every == 0);
  ++collects_;
  return DoCollect(full);
}

NodeInventory InventoryCollector::CollectFull() {
  absl::MutexLock lock(&mu_);
  ++collects_;
  return DoCollect(true);
}

NodeInventory InventoryCollector::DoCollect(bool full_fd_scan) {
  const common::Clock& clock = options_.clock ? *options_.clock : common::RealClock::Get();
  NodeInventory inv;
  inv.set_root(options_.root);
  inv.set_collected_at_ms(absl::ToUnixMillis(clock.Now()));
  if (common::JoinRoot(options_.root, "") == "/") {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) == 0) inv.set_hostname(host);
    utsname u;
    if (uname(&u) == 0) inv.set_kernel_release(u.release);
  } else {
    std::string h = ReadTrimmed(common::JoinRoot(options_.root, "proc/sys/kernel/hostname"));
    if (h.empty()) h = ReadTrimmed(common::JoinRoot(options_.root, "etc/hostname"));
    inv.set_hostname(h);
    inv.set_kernel_release(ReadTrimmed(common::JoinRoot(options_.root, "proc/sys/kernel/osrelease")));
  }

  std::vector<BackendResult> results;
  last_timings_.clear();
  for (auto& b : backends_) {
    if (!b.probe) {
      results.push_back({b.name, b.create_status});
      last_timings_.push_back({b.name, absl::ZeroDuration(), false});
      continue;
    }
    // Wall time: the HIP helper is a child process, so CPU time would miss it.
    absl::Time start = absl::Now();
    results.push_back({b.name, b.probe->Probe()});
    last_timings_.push_back({b.name, absl::Now() - start, results.back().report.ok()});
  }
  MergeOptions mo;
  mo.unreclaimed_tolerance_bytes = options_.unreclaimed_tolerance_bytes;
  mo.products = options_.products;
  MergeDevices(results, mo, &inv);
  if (inv.driver_version().empty()) inv.set_driver_version(ReadDriverVersion(options_.root));

  std::vector<dcufleet::v1::Device> devices(inv.devices().begin(), inv.devices().end());
  if (options_.scan_processes) {
    ProcScanOptions so;
    so.root = options_.root;
    so.proc_root = options_.proc_root;
    so.fd_scan = full_fd_scan ? FdScan::kAll : FdScan::kKfdProcesses;
    for (const auto& d : devices) {
      for (const auto& p : d.vendor_processes()) so.extra_pids.push_back(p.pid());
    }
    // NVML opens /dev/nvidiactl and /dev/nvidia<N> in this process: the
    // agent is not a holder. Only meaningful when the processes listed are
    // the live ones.
    const std::string proc_root =
        options_.proc_root.empty() ? common::JoinRoot(options_.root, "proc") : options_.proc_root;
    if (proc_root == "/proc" || proc_root == "/proc/") so.exclude_pids.push_back(getpid());
    auto scan = ScanDeviceHolders(so, options_.live_instance_ids);
    if (!scan.ok()) {
      // A fixture root without a proc/ is normal; an unreadable one is not.
      *inv.add_findings() = MakeFinding(absl::IsNotFound(scan.status()) ? kInfo : kWarning, kProcUnreadable, "proc",
                                        absl::StrCat(scan.status().message(), ": device holders not scanned"));
    } else {
      std::vector<dcufleet::v1::ProcessHolder> unattributed;
      AttachHolders(*scan, &devices, &unattributed);
      for (auto& h : unattributed) *inv.add_unattributed_holders() = std::move(h);
      for (const auto& f : scan->findings) *inv.add_findings() = f;
      inv.set_processes_scanned(scan->processes_scanned);
      inv.add_probe_log(absl::StrCat("procscan: ", scan->full_fd_scan ? "all processes" : "KFD processes only", ", ",
                                     scan->processes_scanned, " scanned, ", scan->processes.size(), " holder(s)"));
    }
  }
  if (options_.allocation) KeepAllocatedDevices(*options_.allocation, &devices, &inv);
  inv.clear_devices();
  for (auto& d : devices) *inv.add_devices() = std::move(d);
  ComputeMemoryVerdicts(mo, &inv);
  if (inv.devices_size() == 0) {
    *inv.add_findings() = MakeFinding(kWarning, "no_devices", "devices",
                                      absl::StrCat("no accelerator found under root '", options_.root,
                                                   "' by any of: ", absl::StrJoin(options_.probes, ", ")));
  }
  return inv;
}

absl::StatusOr<NodeInventory> CollectInventory(const InventoryOptions& options) {
  auto c = InventoryCollector::Create(options);
  if (!c.ok()) return c.status();
  return (*c)->CollectFull();
}

namespace {

std::string Fig(const dcufleet::v1::MemoryReading& r) { return r.valid() ? HumanBytes(r.bytes()) : "-"; }

// Left-aligned columns sized to their widest cell.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows) {
    if (w.size() < r.size()) w.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string FormatInventoryTable(const NodeInventory& inv) {
  std::string out = absl::StrCat("NODE ", inv.hostname().empty() ? "-" : inv.hostname(), "  kernel ",
                                 inv.kernel_release().empty() ? "-" : inv.kernel_release(), "  driver ",
                                 inv.driver_version().empty() ? "-" : inv.driver_version(), "  root ", inv.root(), "\n");
  absl::StrAppend(&out, "PROBES ", absl::StrJoin(inv.probe_log(), " | "), "\n\n");
  std::vector<std::vector<std::string>> rows = {{"IDX", "PRODUCT", "ARCH (SOURCE)", "PCI", "TOTAL", "HOST FREE",
                                                 "DEVICE FREE", "UNRECLAIMED", "SCHED FREE", "HOLDERS"}};
  for (const auto& d : inv.devices()) {
    const common::HolderTally tally = common::TallyHolders(d);
    std::vector<std::string> parts;
    for (int c = 1; c < dcufleet::v1::HolderClass_ARRAYSIZE; ++c) {
      if (tally.count[c]) {
        parts.push_back(absl::StrCat(tally.count[c], " ", common::HolderClassName(static_cast<dcufleet::v1::HolderClass>(c))));
      }
    }
    std::string unrec = d.unreclaimed().valid() ? HumanBytes(d.unreclaimed_bytes())
                        : d.unreclaimed().source().empty() ? "-"
                                                           : "?";
    rows.push_back({absl::StrCat(d.index()), d.product_name().empty() ? "?" : d.product_name(),
                    d.arch().empty() ? "? (none valid)" : absl::StrCat(d.arch(), " (", d.arch_source(), ")"),
                    d.pci_bus().empty() ? "-" : d.pci_bus(), Fig(d.total()), Fig(d.host_free()), Fig(d.device_free()),
                    unrec, Fig(d.schedulable_free()), parts.empty() ? "0" : absl::StrJoin(parts, ", ")});
  }
  out += Table(rows);

  std::vector<std::vector<std::string>> hrows = {{"IDX", "PID", "CLASS", "STATE", "VRAM", "INSTANCE", "PARENT", "CMDLINE"}};
  auto holder_row = [&](const std::string& idx, const dcufleet::v1::ProcessHolder& h) {
    hrows.push_back({idx, absl::StrCat(h.pid()), std::string(common::HolderClassName(h.holder_class())), h.state(),
                     h.vram_bytes() >= 0 ? HumanBytes(h.vram_bytes()) : "?", h.instance_id().empty() ? "-" : h.instance_id(),
                     h.ppid() > 0 ? absl::StrCat(h.ppid(), h.parent_alive() ? "" : " (gone)") : "-",
                     h.cmdline().substr(0, 70)});
  };
  for (const auto& d : inv.devices()) {
    for (const auto& h : d.holders()) holder_row(absl::StrCat(d.index()), h);
  }
  for (const auto& h : inv.unattributed_holders()) holder_row("-", h);
  if (hrows.size() > 1) {
    absl::StrAppend(&out, "\nHOLDERS (", inv.processes_scanned(), " processes scanned)\n");
    out += Table(hrows);
  }

  std::vector<std::vector<std::string>> frows = {{"SEVERITY", "WHERE", "CODE", "MESSAGE"}};
  for (const auto& f : inv.findings()) frows.push_back({std::string(common::FindingSeverityName(f.severity())), "node", f.code(), f.message()});
  for (const auto& d : inv.devices()) {
    for (const auto& f : d.findings()) {
      frows.push_back({std::string(common::FindingSeverityName(f.severity())), absl::StrCat("device ", d.index()), f.code(), f.message()});
    }
  }
  if (frows.size() > 1) {
    out += "\nFINDINGS\n";
    out += Table(frows);
  } else {
    out += "\nFINDINGS none\n";
  }
  return out;
}

int RunInventoryCommand(const InventoryArgs& args, std::ostream& out, std::ostream& err) {
  std::string output = absl::AsciiStrToLower(args.output);
  if (output != "table" && output != "json") {
    err << "dcu-agent inventory: -o must be 'table' or 'json', got '" << args.output << "'\n";
    return 2;
  }
  auto probes = ParseProbeList(args.device_probe);
  if (!probes.ok()) {
    err << "dcu-agent inventory: " << probes.status().message() << "\n";
    return 2;
  }
  if (!(args.memprobe_timeout_s > 0) || args.memprobe_timeout_s > 3600) {
    err << "dcu-agent inventory: --memprobe_timeout must be in (0, 3600] seconds\n";
    return 2;
  }
  InventoryOptions o;
  o.root = args.root.empty() ? "/" : args.root;
  o.probes = *probes;
  o.memprobe_path = args.memprobe_path;
  o.hip_library = args.hip_library;
  o.nvml_library = args.nvml_library;
  o.cuda_library = args.cuda_library;
  o.memprobe_timeout = absl::Seconds(args.memprobe_timeout_s);
  o.scan_processes = !args.no_processes;
  o.proc_root = args.proc_root;
  for (const auto& id : args.instances) o.live_instance_ids.insert(id);
  auto inv = CollectInventory(o);
  if (!inv.ok()) {
    err << "dcu-agent inventory: " << inv.status().message() << "\n";
    return 2;
  }
  bool bad = false;
  for (const auto& f : inv->findings()) bad |= f.severity() != kInfo;
  for (const auto& d : inv->devices()) {
    for (const auto& f : d.findings()) bad |= f.severity() != kInfo;
  }
  if (output == "json") {
    std::string json;
    google::protobuf::util::JsonPrintOptions jo;
    jo.add_whitespace = true;
    jo.preserve_proto_field_names = true;
    auto s = google::protobuf::util::MessageToJsonString(*inv, &json, jo);
    if (!s.ok()) {
      err << "dcu-agent inventory: cannot print JSON: " << s.ToString() << "\n";
      return 1;
    }
    out << json << "\n";
  } else {
    out << FormatInventoryTable(*inv);
  }
  return bad ? 1 : 0;
}

}  // namespace dcu::agent
