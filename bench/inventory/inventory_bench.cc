// A full inventory of an 8-device K100_AI node with 2,000 processes in a
// synthetic /proc (generated in a temp dir at start-up): KFD/DRM sysfs read
// directly, every process's fd table read, holders classified and
// attributed, memory verdicts computed. Target: < 5 ms CPU per report
// (other managers launch an SMI command line, hundreds of ms, every cycle).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/inventory/inventory.h"
#include "agent/procscan/listen_ports.h"
#include "agent/procscan/proc_scanner.h"
#include "agent/probe/sysfs_kfd_device_probe.h"
#include "benchmark/benchmark.h"

namespace {

namespace fs = std::filesystem;

constexpr int kProcesses = 2000;
constexpr int kFdsPerProcess = 8;

void Write(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

// Builds <tmp>/root: the k100ai-8x fixture plus proc/<pid>/{stat,cmdline,
// environ,fd/*} for kProcesses processes. 16 of them (a TP-8 vLLM of a
// running instance and 8 leftover workers of an ended one) hold /dev/kfd and
// one render node each, with KFD VRAM entries.
class Tree {
 public:
  Tree() {
    char tmpl[] = "/tmp/dcu-bench-XXXXXX";
    dir_ = mkdtemp(tmpl);
    root_ = dir_ + "/root";
    fs::copy(std::string(DCU_FIXTURES) + "/k100ai-8x/root", root_, fs::copy_options::recursive);
    for (const auto& [lib, d] : {std::pair{FAKE_RSMI_GOOD, "/opt/dtk/.hyhal/rocm_smi/lib"}}) {
      fs::create_directories(root_ + d);
      fs::copy_file(lib, root_ + d + "/librocm_smi64.so.2");
    }
    for (int i = 0; i < kProcesses; ++i) {
      int pid = 1000 + i;
      std::string p = absl::StrCat(root_, "/proc/", pid);
      fs::create_directories(p + "/fd");
      bool holder = i < 16;
      std::string comm = holder ? "python3" : (i % 3 ? "bash" : "sshd");
      Write(p + "/stat", absl::StrCat(pid, " (", comm, ") S ", holder && i >= 8 ? 1 : 999, " ", pid, " ", pid,
                                      " 0 -1 4194560 0 0 0 0 12 3 0 0 20 0 1 0 ", 5000 + i,
                                      " 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n"));
      Write(p + "/cmdline", holder ? std::string("python3\0-m\0vllm.entrypoints.openai.api_server\0", 45)
                                   : std::string("bash\0-l\0", 8));
      std::string env = std::string("PATH=/usr/bin\0HOME=/root\0LANG=C.UTF-8\0", 38);
      if (holder) env += std::string(absl::StrCat(dcu::agent::kInstanceMarkerEnv, "=", i < 8 ? "inst-live" : "inst-old")) + '\0';
      Write(p + "/environ", env);
      const char* others[] = {"/dev/pts/0", "/dev/pts/0", "/dev/null", "socket:[4242]", "pipe:[777]",
                              "/var/log/app.log", "anon_inode:[eventfd]", "/usr/lib/x86_64-linux-gnu/libc.so.6"};
      for (int f = 0; f < kFdsPerProcess; ++f) {
        std::string target = others[f];
        if (holder && f == 5) target = "/dev/kfd";
        if (holder && f == 6) target = absl::StrCat("/dev/dri/renderD", 128 + i % 8);
        fs::create_symlink(target, absl::StrCat(p, "/fd/", f));
      }
      if (holder) {
        std::string k = absl::StrCat(root_, "/sys/class/kfd/kfd/proc/", pid);
        fs::create_directories(k);
        Write(absl::StrCat(k, "/vram_", 50000 + (i % 8) * 1111), absl::StrCat(20ll << 30, "\n"));
      }
    }
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const std::string& root() const { return root_; }

 private:
  std::string dir_, root_;
};

const Tree& GetTree() {
  static const Tree* tree = new Tree();
  return *tree;
}

void RunCollector(benchmark::State& state, std::vector<std::string> probes, bool full, int full_scan_every = 0) {
  dcu::agent::InventoryOptions o;
  o.root = GetTree().root();
  o.probes = std::move(probes);
  o.live_instance_ids = {"inst-live"};
  o.rocm_smi_dirs = {"/opt/dtk/.hyhal/rocm_smi/lib"};
  o.full_scan_every = full_scan_every;
  auto collector = dcu::agent::InventoryCollector::Create(o);
  if (!collector.ok()) {
    state.SkipWithError(std::string(collector.status().message()).c_str());
    return;
  }
  int holders = 0;
  for (auto _ : state) {
    dcufleet::v1::NodeInventory inv = full ? (*collector)->CollectFull() : (*collector)->Collect();
    holders = 0;
    for (const auto& d : inv.devices()) holders += d.holders_size();
    benchmark::DoNotOptimize(inv);
  }
  state.counters["devices"] = 8;
  state.counters["processes"] = kProcesses;
  state.counters["holders"] = holders;
}

// The report the agent builds every cycle: all devices from sysfs, holders
// found through KFD's process list (their fds read), classified, attributed.
void BM_PeriodicInventory_Sysfs(benchmark::State& state) { RunCollector(state, {"sysfs_kfd"}, false); }
BENCHMARK(BM_PeriodicInventory_Sysfs)->Unit(benchmark::kMillisecond);

// Plus the in-process rocm-smi backend (a test-built librocm_smi64).
void BM_PeriodicInventory_SysfsRocmSmi(benchmark::State& state) {
  RunCollector(state, {"sysfs_kfd", "rocm_smi"}, false);
}
BENCHMARK(BM_PeriodicInventory_SysfsRocmSmi)->Unit(benchmark::kMillisecond);

// A full fd scan every 10th cycle (the default is every 30th).
void BM_AgentCycle_FullEvery10(benchmark::State& state) { RunCollector(state, {"sysfs_kfd"}, false, 10); }
BENCHMARK(BM_AgentCycle_FullEvery10)->Unit(benchmark::kMillisecond);

// Every process's fd table read (dcu-agent inventory, reap).
void BM_FullInventory_AllFds(benchmark::State& state) { RunCollector(state, {"sysfs_kfd"}, true); }
BENCHMARK(BM_FullInventory_AllFds)->Unit(benchmark::kMillisecond);

void BM_ProcScanAllFdsOnly(benchmark::State& state) {
  dcu::agent::ProcScanOptions o;
  o.root = GetTree().root();
  for (auto _ : state) {
    auto r = dcu::agent::ScanDeviceHolders(o, {"inst-live"});
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ProcScanAllFdsOnly)->Unit(benchmark::kMillisecond);

void BM_SysfsProbeOnly(benchmark::State& state) {
  dcu::agent::SysfsKfdDeviceProbe probe(GetTree().root());
  for (auto _ : state) {
    auto r = probe.Probe();
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_SysfsProbeOnly)->Unit(benchmark::kMicrosecond);

// The ports other services hold, as every report reads them: the kernel
// over netlink (LISTEN only: the default) against /proc/net's tables, whose
// read walks the whole established hash. Compare CPU, not wall time.
void BM_ListenPorts_Netlink(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<std::string> problems;
    benchmark::DoNotOptimize(dcu::agent::ForeignListenPorts("", {}, &problems));
  }
}
BENCHMARK(BM_ListenPorts_Netlink)->Unit(benchmark::kMicrosecond);

void BM_ListenPorts_ProcNetTables(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<std::string> problems;
    benchmark::DoNotOptimize(dcu::agent::ForeignListenPorts("/proc/net", {}, &problems));
  }
}
BENCHMARK(BM_ListenPorts_ProcNetTables)->Unit(benchmark::kMicrosecond);

}  // namespace
