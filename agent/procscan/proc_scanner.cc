#include "agent/procscan/proc_scanner.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/probe/findings.h"
#include "common/fs_util.h"
#include "common/holder_class.h"
#include "common/proc_stat.h"

namespace dcu::agent {
namespace {

using dcufleet::v1::Device;
using dcufleet::v1::HolderClass;
using dcufleet::v1::ProcessHolder;

// Reads a whole small file relative to a directory fd. Returns false (errno
// set) on failure.
bool ReadAt(int dirfd, const char* path, std::string* out, size_t max = 1 << 16) {
  int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  while (out->size() < max) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      errno = e;
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

bool IsNumber(const char* s) {
  if (!*s) return false;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

struct PathMapper {
  std::string root_prefix;  // "" for "/", else "/tmp/x/root"
  bool take_as_is = true;

  // Returns the device path seen from the root, or "" when the target is
  // outside it (see ProcScanOptions).
  absl::string_view Map(absl::string_view target) const {
    if (!root_prefix.empty() && target.size() > root_prefix.size() &&
        absl::StartsWith(target, root_prefix) && target[root_prefix.size()] == '/') {
      return target.substr(root_prefix.size());
    }
    return take_as_is ? target : absl::string_view();
  }
};

struct Holding {
  bool kfd = false;
  std::vector<int> render;
  std::vector<int> nvidia;
  std::vector<std::string> paths;
};

// Records a device path if it is one we care about.
void NoteDevice(absl::string_view path, Holding* h) {
  if (!absl::StartsWith(path, "/dev/")) return;
  auto add_path = [&] {
    for (const auto& p : h->paths) {
      if (p == path) return;
    }
    h->paths.emplace_back(path);
  };
  if (path == "/dev/kfd") {
    h->kfd = true;
    add_path();
    return;
  }
  absl::string_view rest = path;
  if (absl::ConsumePrefix(&rest, "/dev/dri/renderD")) {
    int minor = 0;
    if (absl::SimpleAtoi(rest, &minor)) {
      if (std::find(h->render.begin(), h->render.end(), minor) == h->render.end()) h->render.push_back(minor);
      add_path();
    }
    return;
  }
  rest = path;
  if (absl::ConsumePrefix(&rest, "/dev/nvidia")) {
    int minor = 0;
    if (absl::SimpleAtoi(rest, &minor)) {
      if (std::find(h->nvidia.begin(), h->nvidia.end(), minor) == h->nvidia.end()) h->nvidia.push_back(minor);
    }
    add_path();  // nvidiactl / nvidia-uvm count as holding, without a device
  }
}

std::string JoinNul(absl::string_view data) {
  std::string out(data);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  std::replace(out.begin(), out.end(), '\0', ' ');
  return out;
}

// Finds NAME=value in a NUL-separated environ block.
std::string EnvValue(absl::string_view environ_block, absl::string_view name) {
  for (absl::string_view kv : absl::StrSplit(environ_block, '\0')) {
    if (kv.size() > name.size() && absl::StartsWith(kv, name) && kv[name.size()] == '=') {
      return std::string(kv.substr(name.size() + 1));
    }
  }
  return "";
}

}  // namespace

HolderClass ClassifyHolder(absl::string_view state, absl::string_view instance_id,
                           const absl::flat_hash_set<std::string>& live_instance_ids, std::string* reason) {
  if (state == "Z") {
    *reason = "zombie (state Z): its parent has not reaped it";
    return dcufleet::v1::HOLDER_ZOMBIE;
  }
  if (!instance_id.empty()) {
    if (live_instance_ids.contains(std::string(instance_id))) {
      *reason = absl::StrCat("marker '", instance_id, "' is a running instance");
      return dcufleet::v1::HOLDER_MANAGED;
    }
    *reason = absl::StrCat("marker '", instance_id, "' is not a running instance");
    return dcufleet::v1::HOLDER_LEFTOVER;
  }
  *reason = absl::StrCat("no ", kInstanceMarkerEnv, " marker");
  return dcufleet::v1::HOLDER_UNMANAGED;
}

absl::StatusOr<ProcScanResult> ScanDeviceHolders(const ProcScanOptions& options,
                                                 const absl::flat_hash_set<std::string>& live_instance_ids) {
  ProcScanResult result;
  const std::string proc_root =
      options.proc_root.empty() ? common::JoinRoot(options.root, "proc") : options.proc_root;
  PathMapper mapper;
  {
    std::string r = common::JoinRoot(options.root, "");
    mapper.root_prefix = r == "/" ? "" : r;
    mapper.take_as_is = mapper.root_prefix.empty() ||
                        absl::StartsWith(common::JoinRoot(proc_root, ""), mapper.root_prefix + "/");
  }

  int proc_fd = open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc_fd < 0) return common::ErrnoToStatus(errno, "cannot list processes in", proc_root);
  std::map<int, Holding> holders;
  int unreadable = 0;
  char fd_path[320];
  char target[4096];
  // Reads one process's fd table; records it in `holders` when it holds a
  // device.
  auto excluded = [&](int pid) {
    return std::find(options.exclude_pids.begin(), options.exclude_pids.end(), pid) != options.exclude_pids.end();
  };
  auto scan_fds = [&](const char* pid_name) {
    {
      int pid = 0;
      if (absl::SimpleAtoi(pid_name, &pid) && excluded(pid)) return;
    }
    ++result.processes_scanned;
    snprintf(fd_path, sizeof(fd_path), "%s/fd", pid_name);
    int fdd = openat(proc_fd, fd_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fdd < 0) {
      if (errno == EACCES || errno == EPERM) ++unreadable;
      return;  // gone, a kernel thread, or not ours to read
    }
    DIR* fdir = fdopendir(fdd);
    if (!fdir) {
      close(fdd);
      return;
    }
    Holding h;
    while (dirent* fe = readdir(fdir)) {
      if (fe->d_name[0] == '.') continue;
      ssize_t n = readlinkat(fdd, fe->d_name, target, sizeof(target) - 1);
      if (n <= 0) continue;
      absl::string_view t(target, static_cast<size_t>(n));
      // Cheap reject before mapping: device paths contain "/dev/".
      if (t.find("/dev/") == absl::string_view::npos) continue;
      NoteDevice(mapper.Map(t), &h);
    }
    closedir(fdir);
    if (h.kfd || !h.render.empty() || !h.paths.empty()) {
      int pid = 0;
      if (absl::SimpleAtoi(pid_name, &pid)) holders[pid] = std::move(h);
    }
  };

  // KFD's own per-process list: VRAM per gpu_id, and processes whose fds we
  // cannot see (other namespaces, zombie leaders).
  std::map<int, std::vector<std::pair<uint32_t, int64_t>>> kfd_vram;
  const std::string kfd_proc = common::JoinRoot(options.root, "sys/class/kfd/kfd/proc");
  auto kfd_pids = common::ListDir(kfd_proc);
  if (kfd_pids.ok()) {
    for (const std::string& p : *kfd_pids) {
      int pid = 0;
      if (!absl::SimpleAtoi(p, &pid)) continue;
      auto& entries = kfd_vram[pid];
      auto files = common::ListDir(absl::StrCat(kfd_proc, "/", p));
      if (!files.ok()) continue;
      for (const std::string& f : *files) {
        absl::string_view rest = f;
        uint32_t gpu_id = 0;
        if (!absl::ConsumePrefix(&rest, "vram_") || !absl::SimpleAtoi(rest, &gpu_id)) continue;
        auto v = common::ReadSmallFile(absl::StrCat(kfd_proc, "/", p, "/", f), 64);
        int64_t bytes = -1;
        if (v.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*v), &bytes)) entries.emplace_back(gpu_id, bytes);
      }
    }
  } else if (absl::IsPermissionDenied(kfd_pids.status())) {
    result.findings.push_back(MakeFinding(kWarning, kFileUnreadable, kfd_proc, kfd_pids.status().message()));
  }

  const bool full = options.fd_scan == FdScan::kAll || !kfd_pids.ok();
  result.full_fd_scan = full;
  DIR* pd = nullptr;
  if (full) {
    pd = fdopendir(proc_fd);
    if (!pd) {
      int e = errno;
      close(proc_fd);
      return common::ErrnoToStatus(e, "cannot list processes in", proc_root);
    }
    while (dirent* pe = readdir(pd)) {
      if (IsNumber(pe->d_name)) scan_fds(pe->d_name);
    }
  } else {
    char name[16];
    for (const auto& [pid, v] : kfd_vram) {
      snprintf(name, sizeof(name), "%d", pid);
      scan_fds(name);
    }
  }
  for (const auto& [pid, v] : kfd_vram) holders[pid].kfd = true;
  // Pids only the vendor library names (their device files may be out of
  // sight): inspect them too.
  std::vector<int> vendor_only;
  for (int pid : options.extra_pids) {
    if (pid <= 0 || excluded(pid) || holders.count(pid)) continue;
    holders[pid];
    vendor_only.push_back(pid);
  }

  std::string buf;
  for (auto& [pid, h] : holders) {
    ScannedProcess sp;
    ProcessHolder& ph = sp.holder;
    ph.set_pid(pid);
    ph.set_vram_bytes(-1);
    char rel[64];
    snprintf(rel, sizeof(rel), "%d/stat", pid);
    absl::StatusOr<common::ProcStat> stat = absl::NotFoundError("unread");
    if (ReadAt(proc_fd, rel, &buf)) stat = common::ParseProcStat(buf);
    const bool only_vendor = std::find(vendor_only.begin(), vendor_only.end(), pid) != vendor_only.end();
    if (!stat.ok()) {
      if (only_vendor) {
        // The driver tears a context down when its process exits, so a pid
        // NVML lists is alive somewhere: in another PID namespace (an agent
        // in a container sees host pids in NVML's list).
        ph.set_state("-");
        ph.set_class_reason(absl::StrCat("listed by the vendor library but not in '", proc_root,
                                         "' (another PID namespace?)"));
        ph.set_holder_class(dcufleet::v1::HOLDER_UNMANAGED);
      } else {
        // Gone since the fd scan (or a KFD entry of a process that has left
        // /proc): KFD may still hold its memory; keep it, marked unknown.
        ph.set_state("?");
        ph.set_class_reason("process not in /proc (exited?)");
        ph.set_holder_class(dcufleet::v1::HOLDER_EXITED);
      }
    } else {
      const int ppid = stat->ppid;
      ph.set_comm(stat->comm);
      ph.set_state(std::string(1, stat->state));
      ph.set_ppid(ppid);
      ph.set_start_time_ticks(stat->start_ticks);
      snprintf(rel, sizeof(rel), "%d/cmdline", pid);
      if (ReadAt(proc_fd, rel, &buf, 8192)) ph.set_cmdline(JoinNul(buf));
      snprintf(rel, sizeof(rel), "%d/environ", pid);
      bool env_ok = ReadAt(proc_fd, rel, &buf, 1 << 20);
      if (env_ok) ph.set_instance_id(EnvValue(buf, kInstanceMarkerEnv));
      if (ppid > 1) {
        snprintf(rel, sizeof(rel), "%d/cmdline", ppid);
        bool alive = ReadAt(proc_fd, rel, &buf, 8192);
        ph.set_parent_alive(alive);
        if (alive) ph.set_parent_cmdline(JoinNul(buf));
      }
      std::string reason;
      ph.set_holder_class(ClassifyHolder(ph.state(), ph.instance_id(), live_instance_ids, &reason));
      if (!env_ok && ph.holder_class() == dcufleet::v1::HOLDER_UNMANAGED) {
        reason = absl::StrCat("environment unreadable (", strerror(errno), "): marker unknown");
      }
      if (ph.holder_class() == dcufleet::v1::HOLDER_LEFTOVER && !ph.parent_alive()) {
        absl::StrAppend(&reason, "; its parent is gone");
      }
      ph.set_class_reason(reason);
    }
    for (const auto& p : h.paths) ph.add_device_paths(p);
    sp.holds_kfd = h.kfd;
    sp.render_minors = std::move(h.render);
    sp.nvidia_minors = std::move(h.nvidia);
    auto kv = kfd_vram.find(pid);
    if (kv != kfd_vram.end()) sp.kfd_vram = std::move(kv->second);
    result.processes.push_back(std::move(sp));
  }
  if (pd) {
    closedir(pd);  // closes proc_fd
  } else {
    close(proc_fd);
  }
  if (unreadable > 0) {
    result.findings.push_back(MakeFinding(
        kWarning, kProcUnreadable, proc_root,
        absl::StrCat(unreadable, " process(es) in '", proc_root,
                     "' could not be inspected (permission denied): device holders among them are not counted; "
                     "run the agent as root or with CAP_SYS_PTRACE")));
  }
  return result;
}

void AttachHolders(const ProcScanResult& scan, std::vector<Device>* devices,
                   std::vector<ProcessHolder>* unattributed) {
  for (Device& d : *devices) {
    d.clear_holders();
    d.clear_holders_vram();
  }
  std::vector<int64_t> vram_sum(devices->size(), 0);
  std::vector<bool> vram_known(devices->size(), false);
  for (const ScannedProcess& sp : scan.processes) {
    bool attached = false;
    const int pid = sp.holder.pid();
    for (size_t i = 0; i < devices->size(); ++i) {
      Device& d = (*devices)[i];
      bool holds = std::find(sp.render_minors.begin(), sp.render_minors.end(), d.drm_render_minor()) !=
                   sp.render_minors.end();
      int64_t vram = -1;
      std::string vram_source;
      if (d.kfd_gpu_id() != 0) {
        for (const auto& [gid, bytes] : sp.kfd_vram) {
          if (gid == d.kfd_gpu_id()) {
            holds = true;
            vram = bytes;
            vram_source = absl::StrCat("kfd:proc/", pid, "/vram_", d.kfd_gpu_id());
          }
        }
      }
      if (d.has_nvidia_minor() &&
          std::find(sp.nvidia_minors.begin(), sp.nvidia_minors.end(), d.nvidia_minor()) != sp.nvidia_minors.end()) {
        holds = true;
      }
      bool listed = false;
      for (const ProcessHolder& vp : d.vendor_processes()) {
        if (vp.pid() != pid) continue;
        holds = listed = true;
        vram = vp.vram_bytes();
        vram_source = vp.vram_source();
      }
      if (!holds) continue;
      if (!listed && vram < 0 && !d.vendor_processes_source().empty()) {
        vram = 0;
        vram_source = absl::StrCat(d.vendor_processes_source(), ": not listed, no memory on this device");
      }
      attached = true;
      ProcessHolder* ph = d.add_holders();
      *ph = sp.holder;
      ph->set_vram_bytes(vram);
      if (vram >= 0) {
        ph->set_vram_source(vram_source);
        // Zombies and processes already gone explain nothing: memory KFD
        // still attributes to them is what a reap cannot give back.
        if (common::HolderIsLive(sp.holder.holder_class())) {
          vram_sum[i] += vram;
          vram_known[i] = true;
        }
      }
    }
    if (!attached && unattributed) unattributed->push_back(sp.holder);
  }
  for (size_t i = 0; i < devices->size(); ++i) {
    Device& d = (*devices)[i];
    auto* r = d.mutable_holders_vram();
    r->set_bytes(vram_sum[i]);
    r->set_valid(vram_known[i] || d.holders_size() == 0);
    r->set_source(d.holders_size() == 0 ? "procscan:no holders"
                  : !d.vendor_processes_source().empty()
                      ? absl::StrCat(d.vendor_processes_source(), " of live holders")
                      : "kfd:proc/*/vram_<gpu_id> of live holders");
  }
}

}  // namespace dcu::agent
