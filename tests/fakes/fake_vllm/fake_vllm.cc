// fake_vllm: a test double of vLLM's OpenAI-compatible server.
//
// Built statically (libc + libstdc++ only) so the same file runs as the
// `bin/python` of a fake conda env and as the entry point of a container image
// made by `docker import`. It accepts vLLM's server arguments, prints
// vLLM-like start-up logs with shard-loading progress, serves /health,
// /v1/models, /v1/completions and /v1/chat/completions, and fails the way real
// vLLM fails when the SCENARIO FILE of its env/image says so. The scenario is
// found from the env prefix or $FAKE_VLLM_SCENARIO (set by the image), never
// from anything the code under test chooses. See README.md for the format and
// the source of every message.
//
// Deliberately self-contained (no project libraries): it must link with
// -static and stand for a foreign program.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;

volatile sig_atomic_t g_term = 0;
void OnTerm(int) { g_term = 1; }

// ---------------------------------------------------------------- utilities

bool StartsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

bool FileExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::optional<std::string> ReadFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Dirname(const std::string& p) {
  size_t s = p.rfind('/');
  if (s == std::string::npos) return ".";
  if (s == 0) return "/";
  return p.substr(0, s);
}

std::string Basename(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string GetEnv(const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

bool HasEnv(const char* name) { return getenv(name) != nullptr; }

// Python's repr of round(x, 2): "4.8", "57.59", "64.0".
std::string PyRound2(double x) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.2f", x);
  std::string s(buf);
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

std::string PyFloat(double x) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%g", x);
  std::string s(buf);
  if (s.find('.') == std::string::npos && s.find('e') == std::string::npos) s += ".0";
  return s;
}

void SleepSeconds(double s) {
  if (s <= 0) return;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (!g_term && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// "INFO 07-10 12:00:01 [api_server.py:1395] message", the prefix of vLLM's
// logger (vllm/logger.py _FORMAT "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s",
// datefmt "%m-%d %H:%M:%S").
// Now, formatted with strftime in local time or UTC.
std::string FormatNow(const char* format, bool utc) {
  time_t t = time(nullptr);
  struct tm tm;
  if (utc) {
    gmtime_r(&t, &tm);
  } else {
    localtime_r(&t, &tm);
  }
  char buf[64];
  strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

std::string Stamp() { return FormatNow("%m-%d %H:%M:%S", false); }

void Log(const std::string& level, const std::string& where, const std::string& msg,
         const std::string& proc_prefix = "") {
  // vLLM's logger writes to stdout.
  fprintf(stdout, "%s%s %s [%s] %s\n", proc_prefix.c_str(), level.c_str(), Stamp().c_str(),
          where.c_str(), msg.c_str());
  fflush(stdout);
}

void Err(const std::string& line) {
  fprintf(stderr, "%s\n", line.c_str());
  fflush(stderr);
}

// ---------------------------------------------------------------- arguments

struct Args {
  std::string invocation;  // "python -m ..." / "vllm serve"
  std::string model = "facebook/opt-125m";  // vLLM's default --model
  std::string host = "0.0.0.0";
  int port = 8000;
  int tp = 1;
  std::vector<std::string> served_names;
  int max_model_len = 0;
  double gpu_memory_utilization = 0.9;
  std::optional<long long> kv_cache_memory_bytes;
  bool enforce_eager = false;
  std::string hf_overrides;
  std::string dtype = "auto";
  std::map<std::string, std::string> flags;  // every flag seen, normalised
  std::vector<std::string> order;            // flag names in order
};

// Flags of vLLM's server that take no value (store_true).
const std::set<std::string>& BoolFlags() {
  static const std::set<std::string> kFlags = {
      "--enforce-eager", "--trust-remote-code", "--skip-mm-profiling",
      "--disable-log-requests", "--disable-log-stats", "--enable-prefix-caching",
      "--no-enable-prefix-caching", "--enable-chunked-prefill", "--no-enable-chunked-prefill",
      "--disable-custom-all-reduce", "--enable-auto-tool-choice", "--enable-reasoning",
      "--disable-frontend-multiprocessing", "--enable-expert-parallel", "--disable-fastapi-docs",
      "--use-v2-block-manager", "--enable-lora", "--disable-sliding-window",
      "--disable-async-output-proc", "--enable-log-requests", "--headless",
      "--disable-uvicorn-access-log", "--enable-sleep-mode", "--enable-server-load-tracking",
      "--async-scheduling", "--enable-force-include-usage", "--enable-prompt-tokens-details"};
  return kFlags;
}

// Flags that take one or more values (nargs="+").
const std::set<std::string>& MultiFlags() {
  static const std::set<std::string> kFlags = {"--served-model-name", "--allowed-origins",
                                               "--middleware", "--api-key"};
  return kFlags;
}

std::string NormaliseFlag(const std::string& f) {
  // vLLM's FlexibleArgumentParser accepts --max_model_len as --max-model-len.
  std::string out = f;
  for (size_t i = 2; i < out.size(); ++i) {
    if (out[i] == '_') out[i] = '-';
  }
  return out;
}

// Parses server arguments; returns an error line (argparse style) or "".
std::string ParseServerArgs(const std::vector<std::string>& argv, size_t start, Args* a,
                            const std::set<std::string>& rejected) {
  std::vector<std::string> unrecognized;
  for (size_t i = start; i < argv.size(); ++i) {
    std::string tok = argv[i];
    if (!StartsWith(tok, "-")) {
      unrecognized.push_back(tok);
      continue;
    }
    std::string value;
    bool has_inline = false;
    size_t eq = tok.find('=');
    if (StartsWith(tok, "--") && eq != std::string::npos) {
      value = tok.substr(eq + 1);
      tok = tok.substr(0, eq);
      has_inline = true;
    }
    std::string flag = NormaliseFlag(tok);
    if (flag == "-tp") flag = "--tensor-parallel-size";
    if (flag == "-O") flag = "--compilation-config";
    if (rejected.count(flag)) {
      unrecognized.push_back(argv[i]);
      if (!has_inline && i + 1 < argv.size() && !StartsWith(argv[i + 1], "--")) {
        unrecognized.push_back(argv[++i]);
      }
      continue;
    }
    if (BoolFlags().count(flag)) {
      a->flags[flag] = "true";
      a->order.push_back(flag);
      continue;
    }
    if (MultiFlags().count(flag)) {
      std::vector<std::string> vals;
      if (has_inline) vals.push_back(value);
      while (i + 1 < argv.size() && !StartsWith(argv[i + 1], "--")) vals.push_back(argv[++i]);
      if (vals.empty()) return "error: argument " + flag + ": expected at least one argument";
      std::string joined;
      for (const auto& v : vals) joined += (joined.empty() ? "" : " ") + v;
      a->flags[flag] = joined;
      a->order.push_back(flag);
      if (flag == "--served-model-name") a->served_names = vals;
      continue;
    }
    if (!has_inline) {
      if (i + 1 < argv.size() && !(StartsWith(argv[i + 1], "--"))) {
        value = argv[++i];
      } else {
        // An unknown flag without a value is taken as a switch; a known
        // value flag without one is an argparse error.
        static const std::set<std::string> kNeedValue = {
            "--model", "--port", "--host", "--tensor-parallel-size", "--max-model-len",
            "--gpu-memory-utilization", "--kv-cache-memory-bytes", "--hf-overrides", "--dtype"};
        if (kNeedValue.count(flag)) return "error: argument " + flag + ": expected one argument";
        a->flags[flag] = "true";
        a->order.push_back(flag);
        continue;
      }
    }
    a->flags[flag] = value;
    a->order.push_back(flag);
    try {
      if (flag == "--model") a->model = value;
      else if (flag == "--host") a->host = value;
      else if (flag == "--port") a->port = std::stoi(value);
      else if (flag == "--tensor-parallel-size") a->tp = std::stoi(value);
      else if (flag == "--max-model-len") a->max_model_len = std::stoi(value);
      else if (flag == "--gpu-memory-utilization") a->gpu_memory_utilization = std::stod(value);
      else if (flag == "--kv-cache-memory-bytes") a->kv_cache_memory_bytes = std::stoll(value);
      else if (flag == "--hf-overrides") a->hf_overrides = value;
      else if (flag == "--dtype") a->dtype = value;
    } catch (const std::exception&) {
      return "error: argument " + flag + ": invalid value: '" + value + "'";
    }
  }
  if (a->flags.count("--enforce-eager")) a->enforce_eager = true;
  if (!unrecognized.empty()) {
    std::string s = "error: unrecognized arguments:";
    for (const auto& u : unrecognized) s += " " + u;
    return s;
  }
  return "";
}

// ---------------------------------------------------------------- scenario

struct Failure {
  std::string kind;
  json params;
  json when;
};

struct Scenario {
  std::string path;  // "" when none
  double startup_seconds = 0.05;
  double load_seconds = 0.2;
  int shards = 0;  // 0: from the model dir, else 4
  std::string vllm_version;
  std::vector<int> dirty_devices;
  long long device_total_bytes = 68702699520LL;  // 63.98 GiB, a K100_AI as vLLM prints it
  long long dirty_free_bytes = 5153960755LL;     // 4.8 GiB
  double crash_after_seconds = 0;
  int crash_exit_code = 1;
  int crash_signal = 0;
  std::vector<std::string> crash_lines;
  bool ignore_sigterm = false;
  int workers = 0;
  bool workers_escape_group = false;
  std::set<std::string> reject_args;
  std::vector<Failure> failures;
  std::string completion_text;
  json service = json::object();  // {"ttft_ms", "token_delay_ms", "max_concurrency"}
  // Issue 23: start-up pacing. torch.compile after the weights (Triton
  // kernels written to $TRITON_CACHE_DIR over compile_seconds), CUDA graph
  // capture after the KV cache, and a hang at a named point.
  double compile_seconds = 0;
  int compile_files = 0;
  double capture_seconds = 0;
  int capture_graphs = 0;
  std::string hang_at;  // "distributed_init", "" = none
  // A fixture root laid out like / (sys/class/kfd, sys/class/drm, dev): the
  // engine holds device memory there as a real one does (DeviceHold).
  std::string device_root;
  // While serving, `repeat_line` every `repeat_every_seconds`, and after
  // each `repeat_mark_every` of them "fake-vllm: mark N" (0: no marks).
  // `repeat_burst` lines each time (a burst of access lines).
  std::string repeat_line;
  double repeat_every_seconds = 0;
  int repeat_mark_every = 0;
  int repeat_burst = 1;
};

bool LoadScenario(const std::string& path, Scenario* sc, std::string* error) {
  auto text = ReadFile(path);
  if (!text) {
    *error = "cannot read " + path;
    return false;
  }
  try {
    json j = json::parse(*text);
    if (!j.is_object()) {
      *error = path + ": top level must be an object";
      return false;
    }
    sc->path = path;
    sc->startup_seconds = j.value("startup_seconds", sc->startup_seconds);
    sc->load_seconds = j.value("load_seconds", sc->load_seconds);
    sc->shards = j.value("shards", 0);
    sc->vllm_version = j.value("vllm_version", std::string());
    if (j.contains("dirty_devices")) sc->dirty_devices = j["dirty_devices"].get<std::vector<int>>();
    sc->device_total_bytes = j.value("device_total_bytes", sc->device_total_bytes);
    sc->dirty_free_bytes = j.value("dirty_free_bytes", sc->dirty_free_bytes);
    sc->ignore_sigterm = j.value("ignore_sigterm", false);
    sc->workers = j.value("workers", 0);
    sc->workers_escape_group = j.value("workers_escape_group", false);
    sc->completion_text = j.value("completion_text", std::string());
    if (j.contains("compile")) {
      sc->compile_seconds = j["compile"].value("seconds", 0.0);
      sc->compile_files = j["compile"].value("triton_files", 0);
    }
    if (j.contains("capture")) {
      sc->capture_seconds = j["capture"].value("seconds", 0.0);
      sc->capture_graphs = j["capture"].value("graphs", 0);
    }
    sc->hang_at = j.value("hang_at", std::string());
    sc->device_root = j.value("device_root", std::string());
    if (j.contains("repeat")) {
      const json& r = j["repeat"];
      sc->repeat_line = r.value("line", std::string());
      sc->repeat_every_seconds = r.value("every_seconds", 0.1);
      sc->repeat_mark_every = r.value("mark_every", 0);
      sc->repeat_burst = std::clamp(r.value("burst", 1), 1, 100000);
    }
    if (j.contains("service")) {
      if (!j["service"].is_object()) {
        *error = path + ": \"service\" must be an object";
        return false;
      }
      sc->service = j["service"];
    }
    if (j.contains("reject_args")) {
      for (const auto& a : j["reject_args"]) sc->reject_args.insert(a.get<std::string>());
    }
    if (j.contains("crash")) {
      const json& c = j["crash"];
      sc->crash_after_seconds = c.value("after_seconds", 0.0);
      sc->crash_exit_code = c.value("exit_code", 1);
      sc->crash_signal = c.value("signal", 0);
      if (c.contains("lines")) sc->crash_lines = c["lines"].get<std::vector<std::string>>();
    }
    if (j.contains("failures")) {
      for (const auto& f : j["failures"]) {
        Failure fl;
        fl.kind = f.at("kind").get<std::string>();
        fl.params = f;
        fl.when = f.value("when", json::object());
        sc->failures.push_back(std::move(fl));
      }
    }
  } catch (const std::exception& e) {
    *error = path + ": " + e.what();
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- context

struct Context {
  std::string argv0;
  std::string prefix;  // the env prefix (dirname of bin/)
  std::string site;    // <prefix>/lib/python3.10/site-packages
  Args args;
  Scenario sc;
  json config;  // effective model config (config.json + --hf-overrides)
  bool has_config = false;
  int shards = 4;
  std::vector<int> visible_devices;
  std::string version = "0.9.2";
  std::vector<pid_t> workers;
};

std::string Frame(const Context& c, const std::string& rel, int line, const std::string& fn) {
  return "  File \"" + c.site + "/" + rel + "\", line " + std::to_string(line) + ", in " + fn;
}

std::string ReadDistVersion(const std::string& site, const std::string& pkg) {
  DIR* d = opendir(site.c_str());
  if (!d) return "";
  std::string found;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (StartsWith(n, pkg + "-") && n.size() > 10 && n.substr(n.size() - 10) == ".dist-info") {
      auto meta = ReadFile(site + "/" + n + "/METADATA");
      if (meta) {
        std::istringstream in(*meta);
        std::string line;
        while (std::getline(in, line)) {
          if (StartsWith(line, "Version: ")) {
            found = line.substr(9);
            while (!found.empty() && (found.back() == '\r' || found.back() == ' ')) found.pop_back();
            break;
          }
        }
      }
    }
  }
  closedir(d);
  return found;
}

std::string ResolveArgv0(const std::string& argv0) {
  if (argv0.find('/') != std::string::npos) return argv0;
  for (const auto& dir : Split(GetEnv("PATH"), ':')) {
    if (dir.empty()) continue;
    std::string cand = dir + "/" + argv0;
    if (access(cand.c_str(), X_OK) == 0) return cand;
  }
  return argv0;
}

std::vector<int> ParseDeviceList(const std::string& s) {
  std::vector<int> out;
  for (const auto& p : Split(s, ',')) {
    if (p.empty()) continue;
    try {
      out.push_back(std::stoi(p));
    } catch (...) {
    }
  }
  return out;
}

// ---------------------------------------------------------------- device memory

// With a scenario's "device_root", the engine holds device memory the way a
// real one does, in the files the agent reads there (on a real host the
// kernel writes them): it keeps <root>/dev/kfd and each visible device's
// render node open, KFD lists it with its VRAM per GPU
// (sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>, beside a `.fake-engine` mark
// the test libamdhip64 reads to lower the device's free memory), and the
// DRM counter the SMI reads (sys/class/drm/cardN/device/mem_info_vram_used)
// grows by what it holds. Everything is given back when the engine ends
// (SIGTERM, a start-up failure, the end of serving), as the kernel does at
// process exit. Visible device K is the K-th GPU node of the KFD topology,
// HIP's enumeration order.
struct HeldDevice {
  std::string gpu_id;
  std::string used_path;  // mem_info_vram_used of its DRM card
  long long total = 0;
  long long held = 0;
};

struct DeviceHold {
  std::string root;
  std::string proc_dir;  // <root>/sys/class/kfd/kfd/proc/<pid>
  std::vector<int> fds;
  std::vector<HeldDevice> devices;
};

DeviceHold g_hold;

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

long long PropertyOf(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  long long v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return -1;
}

// The GPU nodes of the root's KFD topology, in numeric order.
std::vector<std::string> GpuNodeDirs(const std::string& root) {
  std::string nodes = root + "/sys/class/kfd/kfd/topology/nodes";
  std::vector<int> numbers;
  if (DIR* d = opendir(nodes.c_str())) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long n = strtol(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0') numbers.push_back(static_cast<int>(n));
    }
    closedir(d);
  }
  std::sort(numbers.begin(), numbers.end());
  std::vector<std::string> gpus;
  for (int n : numbers) {
    std::string dir = nodes + "/" + std::to_string(n);
    auto props = ReadFile(dir + "/properties");
    if (props && PropertyOf(*props, "simd_count") > 0) gpus.push_back(dir);
  }
  return gpus;
}

// The DRM card at a PCI address (its uevent's PCI_SLOT_NAME), "" if none.
std::string CardDeviceDir(const std::string& root, const std::string& pci) {
  std::string drm = root + "/sys/class/drm";
  std::string found;
  if (DIR* d = opendir(drm.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (!StartsWith(name, "card") || name.find('-') != std::string::npos) continue;
      std::string dev = drm + "/" + name + "/device";
      auto uevent = ReadFile(dev + "/uevent");
      if (uevent && uevent->find("PCI_SLOT_NAME=" + pci) != std::string::npos) found = dev;
    }
    closedir(d);
  }
  return found;
}

// Adds `delta` to a counter file under one lock per root: several engines
// of a node change the same card's counter.
void AddToCounter(const std::string& root, const std::string& path, long long delta) {
  int lock = open((root + "/.fake-engine-memory.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock >= 0) flock(lock, LOCK_EX);
  long long value = 0;
  if (auto text = ReadFile(path)) value = atoll(text->c_str());
  value = std::max(0LL, value + delta);
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  if (FILE* f = fopen(tmp.c_str(), "w")) {
    fprintf(f, "%lld\n", value);
    fclose(f);
    rename(tmp.c_str(), path.c_str());
  }
  if (lock >= 0) close(lock);  // releases the lock
}

void WriteHoldRecord() {
  for (const HeldDevice& d : g_hold.devices) {
    std::string path = g_hold.proc_dir + "/vram_" + d.gpu_id;
    std::string tmp = path + ".tmp";
    if (FILE* f = fopen(tmp.c_str(), "w")) {
      fprintf(f, "%lld\n", d.held);
      fclose(f);
      rename(tmp.c_str(), path.c_str());
    }
  }
}

// Opens the devices (KFD lists the process from here on, holding nothing).
void OpenDevices(const Context& c) {
  const std::string& root = c.sc.device_root;
  if (root.empty() || !g_hold.root.empty()) return;
  std::vector<std::string> gpus = GpuNodeDirs(root);
  g_hold.root = root;
  g_hold.proc_dir = root + "/sys/class/kfd/kfd/proc/" + std::to_string(getpid());
  int kfd = open((root + "/dev/kfd").c_str(), O_RDONLY | O_CLOEXEC);
  if (kfd >= 0) g_hold.fds.push_back(kfd);
  for (int index : c.visible_devices) {
    if (index < 0 || index >= static_cast<int>(gpus.size())) continue;
    auto props = ReadFile(gpus[index] + "/properties");
    auto gpu_id = ReadFile(gpus[index] + "/gpu_id");
    if (!props || !gpu_id) continue;
    long long loc = PropertyOf(*props, "location_id"), domain = std::max(0LL, PropertyOf(*props, "domain"));
    char pci[32];
    snprintf(pci, sizeof(pci), "%04llx:%02llx:%02llx.%llx", domain, (loc >> 8) & 0xff, (loc >> 3) & 0x1f,
             loc & 0x7);
    HeldDevice held;
    held.gpu_id = Trimmed(*gpu_id);
    std::string card = CardDeviceDir(root, pci);
    if (!card.empty()) {
      held.used_path = card + "/mem_info_vram_used";
      if (auto total = ReadFile(card + "/mem_info_vram_total")) held.total = atoll(total->c_str());
    }
    if (held.total <= 0) held.total = c.sc.device_total_bytes;
    long long minor = PropertyOf(*props, "drm_render_minor");
    if (minor >= 0) {
      int fd = open((root + "/dev/dri/renderD" + std::to_string(minor)).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) g_hold.fds.push_back(fd);
    }
    g_hold.devices.push_back(held);
  }
  // A recorded tree without a KFD process yet has no proc/ (git keeps no
  // empty directory); the kernel's always exists.
  mkdir((root + "/sys/class/kfd/kfd/proc").c_str(), 0755);
  mkdir(g_hold.proc_dir.c_str(), 0755);
  if (FILE* f = fopen((g_hold.proc_dir + "/.fake-engine").c_str(), "w")) fclose(f);
  WriteHoldRecord();
}

// Holds what `want_of(total)` says of each device (never more than its
// total, never less than it holds already): what the engine has allocated
// so far, the weights, then the KV cache up to --gpu-memory-utilization.
template <typename WantOf>
void HoldDeviceMemory(const Context& c, WantOf want_of) {
  OpenDevices(c);
  if (g_hold.root.empty()) return;
  for (HeldDevice& d : g_hold.devices) {
    const long long want = std::min(want_of(d.total), d.total);
    if (want <= d.held) continue;
    if (!d.used_path.empty()) AddToCounter(g_hold.root, d.used_path, want - d.held);
    d.held = want;
  }
  WriteHoldRecord();
}

void HoldDeviceBytes(const Context& c, long long bytes) {
  HoldDeviceMemory(c, [bytes](long long) { return bytes; });
}

void HoldDeviceFraction(const Context& c, double fraction) {
  HoldDeviceMemory(c, [fraction](long long total) {
    return static_cast<long long>(fraction * static_cast<double>(total));
  });
}

void ReleaseDevices() {
  if (g_hold.root.empty()) return;
  for (HeldDevice& d : g_hold.devices) {
    if (!d.used_path.empty() && d.held > 0) AddToCounter(g_hold.root, d.used_path, -d.held);
    d.held = 0;
    unlink((g_hold.proc_dir + "/vram_" + d.gpu_id).c_str());
  }
  unlink((g_hold.proc_dir + "/.fake-engine").c_str());
  rmdir(g_hold.proc_dir.c_str());
  for (int fd : g_hold.fds) close(fd);
  g_hold = DeviceHold{};
}

// ---------------------------------------------------------------- conditions

std::string LdFirst() {
  auto parts = Split(GetEnv("LD_LIBRARY_PATH"), ':');
  for (const auto& p : parts) {
    if (!p.empty()) return p;
  }
  return "";
}

bool VllmEnvBoolTrue(const char* name, bool dflt) {
  // vllm/envs.py: lambda: (os.getenv(NAME, "True").lower() in ("true", "1"))
  if (!HasEnv(name)) return dflt;
  std::string v = GetEnv(name);
  std::transform(v.begin(), v.end(), v.begin(), ::tolower);
  return v == "true" || v == "1";
}

int HeadSize(const Context& c) {
  if (!c.has_config) return 0;
  const json& cfg = c.config;
  if (cfg.contains("head_dim") && cfg["head_dim"].is_number_integer()) return cfg["head_dim"];
  int hidden = cfg.value("hidden_size", 0);
  int heads = cfg.value("num_attention_heads", 0);
  return heads > 0 ? hidden / heads : 0;
}

// The generic "when" conditions; all given must hold.
bool WhenHolds(const Context& c, const json& when) {
  if (when.contains("arg_present")) {
    for (const auto& a : when["arg_present"]) {
      if (!c.args.flags.count(NormaliseFlag(a.get<std::string>()))) return false;
    }
  }
  if (when.contains("arg_absent")) {
    for (const auto& a : when["arg_absent"]) {
      if (c.args.flags.count(NormaliseFlag(a.get<std::string>()))) return false;
    }
  }
  if (when.contains("env_equals")) {
    for (const auto& [k, v] : when["env_equals"].items()) {
      if (!HasEnv(k.c_str()) || GetEnv(k.c_str()) != v.get<std::string>()) return false;
    }
  }
  if (when.contains("env_not_equals")) {
    for (const auto& [k, v] : when["env_not_equals"].items()) {
      if (HasEnv(k.c_str()) && GetEnv(k.c_str()) == v.get<std::string>()) return false;
    }
  }
  if (when.contains("env_unset")) {
    for (const auto& k : when["env_unset"]) {
      if (HasEnv(k.get<std::string>().c_str())) return false;
    }
  }
  if (when.contains("config_key_missing")) {
    for (const auto& k : when["config_key_missing"]) {
      if (c.has_config && c.config.contains(k.get<std::string>())) return false;
    }
  }
  if (when.contains("ld_library_path_first_not")) {
    if (LdFirst() == when["ld_library_path_first_not"].get<std::string>()) return false;
  }
  return true;
}

bool DirtyVisible(const Context& c, const Failure& f) {
  std::vector<int> dirty = c.sc.dirty_devices;
  if (f.params.contains("dirty_devices")) dirty = f.params["dirty_devices"].get<std::vector<int>>();
  for (int d : c.visible_devices) {
    if (std::find(dirty.begin(), dirty.end(), d) != dirty.end()) return true;
  }
  return false;
}

// Whether the failure of `kind` fires, given its own trigger and "when".
bool Fires(const Context& c, const Failure& f) {
  if (!WhenHolds(c, f.when)) return false;
  const json& p = f.params;
  if (f.kind == "rsmi_init_undefined") {
    std::string want = p.value("required_first_ld_library_path", "/opt/dtk/.hyhal/rocm_smi/lib");
    return LdFirst() != want;
  }
  if (f.kind == "free_memory_low") return DirtyVisible(c, f);
  if (f.kind == "head_size_unsupported") {
    int hs = HeadSize(c);
    if (hs == 0) return false;
    std::vector<int> ok = {32, 64, 96, 128, 160, 192, 224, 256};
    if (p.contains("supported_head_sizes")) ok = p["supported_head_sizes"].get<std::vector<int>>();
    return std::find(ok.begin(), ok.end(), hs) == ok.end();
  }
  if (f.kind == "wvsplitk_missing") return VllmEnvBoolTrue("VLLM_ROCM_USE_SKINNY_GEMM", true);
  if (f.kind == "no_cache_memory") return !c.args.kv_cache_memory_bytes.has_value();
  if (f.kind == "triton_unsupported_target") return true;
  if (f.kind == "custom") return true;
  return false;
}

// Stage at which each failure kind happens during vLLM's start-up.
int StageOf(const Failure& f) {
  static const std::map<std::string, int> kStage = {
      {"rsmi_init_undefined", 0}, {"free_memory_low", 2},      {"head_size_unsupported", 3},
      {"wvsplitk_missing", 5},    {"triton_unsupported_target", 5}, {"no_cache_memory", 6}};
  if (f.kind == "custom") {
    static const std::map<std::string, int> kNamed = {
        {"import", 0}, {"engine_init", 2}, {"model_init", 3}, {"load", 4},
        {"profile", 5}, {"kv_cache", 6}, {"serve", 7}};
    auto it = kNamed.find(f.params.value("stage", "engine_init"));
    return it == kNamed.end() ? 2 : it->second;
  }
  auto it = kStage.find(f.kind);
  return it == kStage.end() ? 2 : it->second;
}

// ---------------------------------------------------------------- messages

// Lines printed by the EngineCore process when it dies during start-up, then
// the API server's own error. Shape: vllm-project/vllm#20305, #23192, #27508;
// the wrapper's frame (vllm/v1/engine/utils.py wait_for_engine_startup) as
// quoted in many public vLLM logs.
void EngineCoreFailure(const Context& c, const std::vector<std::string>& frames,
                       const std::string& exc) {
  std::string pre = "(EngineCore_0 pid=" + std::to_string(getpid()) + ") ERROR " + Stamp() +
                    " [core.py:515] ";
  Err(pre + "EngineCore failed to start.");
  Err(pre + "Traceback (most recent call last):");
  std::vector<std::string> base = {
      Frame(c, "vllm/v1/engine/core.py", 506, "run_engine_core"),
      "    engine_core = EngineCoreProc(*args, **kwargs)",
      Frame(c, "vllm/v1/engine/core.py", 390, "__init__"),
      "    super().__init__(vllm_config, executor_class, log_stats,",
  };
  for (const auto& l : base) Err(pre + l);
  for (const auto& l : frames) Err(pre + l);
  Err(pre + exc);
  Err("Traceback (most recent call last):");
  Err(Frame(c, "vllm/entrypoints/openai/api_server.py", 1495, "<module>"));
  Err("    uvloop.run(run_server(args))");
  Err(Frame(c, "vllm/v1/engine/utils.py", 782, "wait_for_engine_startup"));
  Err("    raise RuntimeError(\"Engine core initialization failed. \"");
  Err("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}");
}

int EmitFailure(const Context& c, const Failure& f) {
  const json& p = f.params;
  int code = p.value("exit_code", 1);
  if (f.kind == "rsmi_init_undefined") {
    // Seed 003 (修改一) and the traceback shape of ROCm/pytorch#2901.
    std::string lib = p.value("library", "/opt/dtk/lib/librccl.so.1");
    Err("Traceback (most recent call last):");
    Err("  File \"/usr/lib/python3.10/runpy.py\", line 187, in _run_module_as_main");
    Err("    mod_name, mod_spec, code = _get_module_details(mod_name, _Error)");
    Err("  File \"/usr/lib/python3.10/runpy.py\", line 110, in _get_module_details");
    Err("    __import__(pkg_name)");
    Err(Frame(c, "vllm/__init__.py", 6, "<module>"));
    Err("    from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs");
    Err(Frame(c, "vllm/engine/arg_utils.py", 20, "<module>"));
    Err("    import torch");
    Err(Frame(c, "torch/__init__.py", 416, "<module>"));
    Err("    from torch._C import *  # noqa: F403");
    Err("ImportError: " + lib + ": undefined symbol: rsmi_init");
    return code;
  }
  if (f.kind == "free_memory_low") {
    // Seed 000 (报错一); full text of vllm/v1/worker/gpu_worker.py as in vllm#20305.
    double gib = 1024.0 * 1024.0 * 1024.0;
    double total = c.sc.device_total_bytes / gib;
    double freeb = p.value("free_bytes", c.sc.dirty_free_bytes) / gib;
    double util = c.args.gpu_memory_utilization;
    EngineCoreFailure(
        c,
        {Frame(c, "vllm/v1/engine/core.py", 76, "__init__"),
         "    self.model_executor = executor_class(vllm_config)",
         Frame(c, "vllm/v1/worker/worker_base.py", 603, "init_device"),
         "    self.worker.init_device()  # type: ignore",
         Frame(c, "vllm/v1/worker/gpu_worker.py", 180, "init_device"), "    raise ValueError("},
        "ValueError: Free memory on device (" + PyRound2(freeb) + "/" + PyRound2(total) +
            " GiB) on startup is less than desired GPU memory utilization (" + PyFloat(util) +
            ", " + PyRound2(total * util) +
            " GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.");
    return code;
  }
  if (f.kind == "head_size_unsupported") {
    // Seed 000 (报错二), verbatim apart from the computed head size.
    std::string hint = p.value(
        "hint",
        "Set VLLM_ATTENTION_BACKEND=FLEX_ATTENTION to use FlexAttention backend which supports "
        "all head sizes.");
    EngineCoreFailure(
        c,
        {Frame(c, "vllm/v1/engine/core.py", 76, "__init__"),
         "    self.model_executor = executor_class(vllm_config)",
         Frame(c, "vllm/v1/worker/gpu_model_runner.py", 1930, "load_model"),
         "    self.model = model_loader.load_model(",
         Frame(c, "vllm/v1/attention/backends/flash_attn.py", 397, "__init__"),
         "    FlashAttentionBackend.validate_head_size(head_size)",
         Frame(c, "vllm/v1/attention/backends/flash_attn.py", 62, "validate_head_size"),
         "    raise ValueError("},
        "ValueError: Head size " + std::to_string(HeadSize(c)) +
            " is not supported by FlashAttention. Supported head sizes are: [32, 64, 96, 128, "
            "160, 192, 224, 256]. " + hint);
    return code;
  }
  if (f.kind == "wvsplitk_missing") {
    // Seed 003 (修改四); torch/_ops.py raises this exact form.
    EngineCoreFailure(
        c,
        {Frame(c, "vllm/v1/engine/core.py", 83, "__init__"),
         "    self._initialize_kv_caches(vllm_config)",
         Frame(c, "vllm/v1/worker/gpu_worker.py", 236, "determine_available_memory"),
         "    self.model_runner.profile_run()",
         Frame(c, "vllm/model_executor/layers/utils.py", 120, "rocm_unquantized_gemm_impl"),
         "    out = ops.wvSplitK(weight, x_view, cu_count, bias)",
         Frame(c, "torch/_ops.py", 1225, "__getattr__"),
         "    raise AttributeError("},
        "AttributeError: '_OpNamespace' '_rocm_C' object has no attribute 'wvSplitK'");
    return code;
  }
  if (f.kind == "triton_unsupported_target") {
    // Seed 000 (破案二) for gfx928; traceback shape of Said-Akbar/triton-gcn5#4.
    std::string arch = p.value("arch", "gfx928");
    Err("loc(\"" + c.site + "/vllm/attention/ops/triton_flash_attention.py\":309:0): error: "
        "unsupported target: '" + arch + "'");
    EngineCoreFailure(
        c,
        {Frame(c, "vllm/v1/engine/core.py", 83, "__init__"),
         "    self._initialize_kv_caches(vllm_config)",
         Frame(c, "triton/compiler/compiler.py", 282, "compile"),
         "    next_module = compile_ir(module, metadata)",
         Frame(c, "triton/backends/amd/compiler.py", 255, "<lambda>"),
         "    stages[\"llir\"] = lambda src, metadata: self.make_llir(src, metadata, options)",
         Frame(c, "triton/backends/amd/compiler.py", 186, "make_llir"), "    pm.run(mod)"},
        "RuntimeError: PassManager::run failed");
    return code;
  }
  if (f.kind == "no_cache_memory") {
    // Seed 003 (修改五); full text and frames from vllm#27508.
    EngineCoreFailure(
        c,
        {Frame(c, "vllm/v1/engine/core.py", 83, "__init__"),
         "    self._initialize_kv_caches(vllm_config)",
         Frame(c, "vllm/v1/core/kv_cache_utils.py", 1243, "get_kv_cache_configs"),
         "    check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,",
         Frame(c, "vllm/v1/core/kv_cache_utils.py", 699, "check_enough_kv_cache_memory"),
         "    raise ValueError(\"No available memory for the cache blocks. \""},
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.");
    return code;
  }
  if (f.kind == "custom") {
    for (const auto& l : p.value("lines", std::vector<std::string>{})) Err(l);
    return code;
  }
  Err("fake-vllm: unknown failure kind '" + f.kind + "'");
  return 3;
}

// ---------------------------------------------------------------- HTTP

struct Request {
  std::string method, path, body;
  std::map<std::string, std::string> headers;
};

bool ReadRequest(int fd, Request* req) {
  std::string buf;
  char tmp[8192];
  size_t header_end = std::string::npos;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (header_end == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    int left = std::chrono::duration_cast<std::chrono::milliseconds>(
                   deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || poll(&p, 1, left) <= 0) return false;
    ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n <= 0) return false;
    buf.append(tmp, n);
    header_end = buf.find("\r\n\r\n");
    if (buf.size() > (1 << 20)) return false;
  }
  std::istringstream hs(buf.substr(0, header_end));
  std::string line;
  std::getline(hs, line);
  std::istringstream rl(line);
  std::string version;
  rl >> req->method >> req->path >> version;
  while (std::getline(hs, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    std::transform(k.begin(), k.end(), k.begin(), ::tolower);
    std::string v = line.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.erase(0, 1);
    req->headers[k] = v;
  }
  size_t want = 0;
  if (req->headers.count("content-length")) {
    try {
      want = std::stoul(req->headers["content-length"]);
    } catch (...) {
      return false;
    }
  }
  req->body = buf.substr(header_end + 4);
  while (req->body.size() < want) {
    pollfd p{fd, POLLIN, 0};
    int left = std::chrono::duration_cast<std::chrono::milliseconds>(
                   deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || poll(&p, 1, left) <= 0) return false;
    ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n <= 0) return false;
    req->body.append(tmp, n);
  }
  return true;
}

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    default: return "Internal Server Error";
  }
}

// False when the peer is gone (reset or closed): a streaming response stops
// there, as uvicorn cancels the request when its client disconnects.
bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    off += n;
  }
  return true;
}

// RFC 7231 section 7.1.1.1 IMF-fixdate, as uvicorn sends it:
// "Sun, 06 Nov 1994 08:49:37 GMT". strftime's %a/%b are English in the "C"
// locale, the only one a static binary has.
std::string HttpDate() { return FormatNow("%a, %d %b %Y %H:%M:%S GMT", true); }

void Respond(int fd, int code, const std::string& body, const std::string& ctype) {
  std::string head = "HTTP/1.1 " + std::to_string(code) + " " + Reason(code) +
                     "\r\ndate: " + HttpDate() + "\r\nserver: uvicorn\r\ncontent-length: " +
                     std::to_string(body.size()) + "\r\ncontent-type: " + ctype +
                     "\r\nconnection: close\r\n\r\n";
  WriteAll(fd, head + body);
}

int CountWords(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int n = 0;
  while (in >> w) ++n;
  return std::max(n, 1);
}

const char* const kWords[] = {" the", " fleet", " is", " serving", " tokens", " on",
                              " every", " device", " today", "."};

std::string MakeText(const Context& c, int max_tokens) {
  if (!c.sc.completion_text.empty()) return c.sc.completion_text;
  std::string out;
  for (int i = 0; i < max_tokens; ++i) out += kWords[i % 10];
  return out;
}

// The pieces a streamed answer is sent in: one word per token, or the
// scenario's completion_text as one piece.
std::vector<std::string> TokenPieces(const Context& c, int max_tokens) {
  if (!c.sc.completion_text.empty()) return {c.sc.completion_text};
  std::vector<std::string> out;
  for (int i = 0; i < max_tokens; ++i) out.push_back(kWords[i % 10]);
  return out;
}

std::string ErrorBody(const std::string& msg, const std::string& type, int code) {
  // vLLM's ErrorResponse (vllm/entrypoints/openai/protocol.py).
  json j = {{"object", "error"}, {"message", msg}, {"type", type}, {"param", nullptr},
            {"code", code}};
  return j.dump();
}

bool KnownModel(const Context& c, const std::string& m) {
  return std::find(c.args.served_names.begin(), c.args.served_names.end(), m) !=
         c.args.served_names.end();
}

// ---------------------------------------------------------------- engine model

// How long the engine takes: time to first token, then a fixed delay per
// further token; at most max_concurrency requests run at once (vLLM's
// --max-num-seqs), the rest wait in FIFO order. Read from flags
// (--fake-ttft-ms, --fake-token-delay-ms, --fake-max-concurrency), else
// $FAKE_VLLM_TTFT_MS, $FAKE_VLLM_TOKEN_DELAY_MS, $FAKE_VLLM_MAX_CONCURRENCY,
// else the scenario's "service" object; all default to 0 (instant, unlimited).
struct ServiceModel {
  double ttft_ms = 0;
  double token_delay_ms = 0;
  int max_concurrency = 0;
};

// The scheduler's counters, exported on /metrics under vLLM's names.
class Engine {
 public:
  explicit Engine(ServiceModel m) : model_(m) {}
  const ServiceModel& model() const { return model_; }

  // Blocks while max_concurrency requests run (the request is "waiting").
  void Admit() {
    std::unique_lock<std::mutex> l(mu_);
    ++waiting_;
    cv_.wait(l, [&] { return model_.max_concurrency <= 0 || running_ < model_.max_concurrency; });
    --waiting_;
    ++running_;
  }
  void Finish(int prompt_tokens, int generated_tokens, bool completed) {
    std::lock_guard<std::mutex> l(mu_);
    --running_;
    prompt_tokens_ += prompt_tokens;
    generation_tokens_ += generated_tokens;
    if (completed) ++success_length_;
    else ++aborted_;
    cv_.notify_one();
  }
  void Count(int prompt_tokens) {
    std::lock_guard<std::mutex> l(mu_);
    prompt_tokens_ += prompt_tokens;
    ++success_stop_;
  }

  // Prometheus text exposition of the V1 engine's gauges and counters, with
  // the label set vLLM uses (model_name, engine); see README.md for sources.
  std::string Metrics(const std::string& model_name) {
    std::lock_guard<std::mutex> l(mu_);
    // KV-cache use follows the running batch: a full batch (max_concurrency,
    // else vLLM's default --max-num-seqs 256) fills the cache.
    int seqs = model_.max_concurrency > 0 ? model_.max_concurrency : 256;
    double kv = std::min(1.0, static_cast<double>(running_) / seqs);
    std::string lbl = "{engine=\"0\",model_name=\"" + model_name + "\"}";
    auto gauge = [&](const std::string& name, const std::string& help, double v) {
      return "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + lbl + " " +
             PyFloat(v) + "\n";
    };
    auto counter = [&](const std::string& name, const std::string& help,
                       const std::string& labels, double v) {
      return "# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n" + name + "_total" +
             labels + " " + PyFloat(v) + "\n";
    };
    std::string out;
    out += gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                 running_);
    out += gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                 waiting_);
    out += gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kv);
    out += gauge("vllm:gpu_cache_usage_perc",
                 "GPU KV-cache usage. 1 means 100 percent usage. DEPRECATED: Use "
                 "vllm:kv_cache_usage_perc instead.",
                 kv);
    out += counter("vllm:prompt_tokens", "Number of prefill tokens processed.", lbl,
                   static_cast<double>(prompt_tokens_));
    out += counter("vllm:generation_tokens", "Number of generation tokens processed.", lbl,
                   static_cast<double>(generation_tokens_));
    std::string base = "engine=\"0\",model_name=\"" + model_name + "\"";
    out += "# HELP vllm:request_success Count of successfully processed requests.\n"
           "# TYPE vllm:request_success counter\n";
    out += "vllm:request_success_total{" + base + ",finished_reason=\"stop\"} " +
           PyFloat(static_cast<double>(success_stop_)) + "\n";
    out += "vllm:request_success_total{" + base + ",finished_reason=\"length\"} " +
           PyFloat(static_cast<double>(success_length_)) + "\n";
    out += "vllm:request_success_total{" + base + ",finished_reason=\"abort\"} " +
           PyFloat(static_cast<double>(aborted_)) + "\n";
    return out;
  }

 private:
  const ServiceModel model_;
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  int waiting_ = 0;
  long long prompt_tokens_ = 0;
  long long generation_tokens_ = 0;
  long long success_stop_ = 0;
  long long success_length_ = 0;
  long long aborted_ = 0;
};

void SleepMs(double ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

// One server-sent event in OpenAI's framing, sent as one HTTP chunk.
bool SendEvent(int fd, const std::string& data) {
  std::string ev = "data: " + data + "\n\n";
  char size[32];
  snprintf(size, sizeof(size), "%zx\r\n", ev.size());
  return WriteAll(fd, std::string(size) + ev + "\r\n");
}

// Streams the answer token by token (chat.completion.chunk or
// text_completion chunks, then "data: [DONE]"), paced by the service model.
// Returns the number of tokens sent before the end or the client's leaving.
int StreamAnswer(const Context& c, Engine& engine, int fd, bool chat, const std::string& model,
                 int max_tokens, bool* completed) {
  long now = static_cast<long>(time(nullptr));
  std::string id = (chat ? "chatcmpl-fake" : "cmpl-fake") + std::to_string(now);
  std::string head = "HTTP/1.1 200 OK\r\ndate: " + HttpDate() +
                     "\r\nserver: uvicorn\r\ncontent-type: text/event-stream; charset=utf-8"
                     "\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
  *completed = false;
  if (!WriteAll(fd, head)) return 0;
  auto chunk = [&](const json& choice) {
    return json({{"id", id}, {"object", chat ? "chat.completion.chunk" : "text_completion"},
                 {"created", now}, {"model", model}, {"choices", json::array({choice})}})
        .dump();
  };
  SleepMs(engine.model().ttft_ms);
  if (chat && !SendEvent(fd, chunk({{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                    {"logprobs", nullptr}, {"finish_reason", nullptr}}))) {
    return 0;
  }
  std::vector<std::string> pieces = TokenPieces(c, max_tokens);
  int sent = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) SleepMs(engine.model().token_delay_ms);
    json choice = chat ? json({{"index", 0}, {"delta", {{"content", pieces[i]}}},
                               {"logprobs", nullptr}, {"finish_reason", nullptr}})
                       : json({{"index", 0}, {"text", pieces[i]}, {"logprobs", nullptr},
                               {"finish_reason", nullptr}, {"stop_reason", nullptr}});
    if (!SendEvent(fd, chunk(choice))) return sent;
    ++sent;
  }
  json last = chat ? json({{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr},
                           {"finish_reason", "length"}, {"stop_reason", nullptr}})
                   : json({{"index", 0}, {"text", ""}, {"logprobs", nullptr},
                           {"finish_reason", "length"}, {"stop_reason", nullptr}});
  if (!SendEvent(fd, chunk(last))) return sent;
  if (!WriteAll(fd, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")) return sent;
  *completed = true;
  return sent;
}

// Whether the peer closed its side while a non-streamed answer was being
// "generated" (uvicorn notices the disconnect and the engine aborts).
bool PeerGone(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) return true;
  char b;
  return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

// Sleeps the generation time of a non-streamed answer in small steps; false
// when the client left meanwhile.
bool GenerateQuietly(Engine& engine, int fd, int tokens) {
  double total = engine.model().ttft_ms + std::max(0, tokens - 1) * engine.model().token_delay_ms;
  auto end = std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                 std::chrono::duration<double, std::milli>(total));
  while (std::chrono::steady_clock::now() < end) {
    if (PeerGone(fd)) return false;
    std::chrono::steady_clock::duration left = end - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        left, std::chrono::milliseconds(5)));
  }
  return true;
}

int PromptTokens(const json& in, bool chat) {
  if (!chat) {
    return CountWords(in.contains("prompt") && in["prompt"].is_string()
                          ? in["prompt"].get<std::string>() : std::string(""));
  }
  int pt = 0;
  if (in.contains("messages") && in["messages"].is_array()) {
    for (const auto& m : in["messages"]) {
      if (m.is_object() && m.contains("content") && m["content"].is_string()) {
        pt += CountWords(m["content"].get<std::string>());
      }
    }
  }
  return pt;
}

void LogAccess(const std::string& peer, const Request& req, int code) {
  // uvicorn's access log line.
  fprintf(stdout, "INFO:     %s - \"%s %s HTTP/1.1\" %d %s\n", peer.c_str(), req.method.c_str(),
          req.path.c_str(), code, Reason(code));
  fflush(stdout);
}

void Handle(const Context& c, Engine& engine, int fd, const std::string& peer) {
  Request req;
  if (!ReadRequest(fd, &req)) return;
  std::string path = req.path.substr(0, req.path.find('?'));
  int code = 200;
  std::string body, ctype = "application/json";
  long now = static_cast<long>(time(nullptr));
  if (path == "/health" && req.method == "GET") {
    ctype = "text/plain";  // vLLM answers an empty 200
  } else if (path == "/metrics" && req.method == "GET") {
    ctype = "text/plain; version=0.0.4; charset=utf-8";
    body = engine.Metrics(c.args.served_names.front());
  } else if (path == "/v1/models" && req.method == "GET") {
    json data = json::array();
    for (const auto& n : c.args.served_names) {
      data.push_back({{"id", n}, {"object", "model"}, {"created", now}, {"owned_by", "vllm"},
                      {"root", c.args.model}, {"parent", nullptr},
                      {"max_model_len", c.args.max_model_len > 0 ? c.args.max_model_len : 40960},
                      {"permission", json::array()}});
    }
    body = json({{"object", "list"}, {"data", data}}).dump();
  } else if ((path == "/v1/completions" || path == "/v1/chat/completions" ||
              path == "/v1/embeddings") &&
             req.method == "POST") {
    json in;
    try {
      in = json::parse(req.body);
      if (!in.is_object()) throw std::runtime_error("the body is not a JSON object");
    } catch (const std::exception& e) {
      code = 400;
      body = ErrorBody(std::string("JSON decode error: ") + e.what(), "BadRequestError", 400);
    }
    if (code == 200) {
      std::string model = in.contains("model") && in["model"].is_string()
                              ? in["model"].get<std::string>() : c.args.served_names.front();
      int max_tokens = 16;
      if (in.contains("max_tokens") && in["max_tokens"].is_number_integer()) {
        max_tokens = std::max(1, in["max_tokens"].get<int>());
      }
      bool chat = path == "/v1/chat/completions";
      bool stream = in.contains("stream") && in["stream"].is_boolean() && in["stream"].get<bool>();
      if (!KnownModel(c, model)) {
        code = 404;
        body = ErrorBody("The model `" + model + "` does not exist.", "NotFoundError", 404);
      } else if (path == "/v1/embeddings") {
        int pt = CountWords(in.contains("input") && in["input"].is_string()
                                ? in["input"].get<std::string>() : std::string(""));
        json vec = json::array();
        for (int i = 0; i < 8; ++i) vec.push_back(std::sin(pt + i) * 0.5);
        body = json({{"id", "embd-fake" + std::to_string(now)}, {"object", "list"},
                     {"created", now}, {"model", model},
                     {"data", json::array({{{"index", 0}, {"object", "embedding"},
                                            {"embedding", vec}}})},
                     {"usage", {{"prompt_tokens", pt}, {"total_tokens", pt},
                                {"completion_tokens", 0}}}})
                   .dump();
        engine.Count(pt);
      } else if (stream) {
        int pt = PromptTokens(in, chat);
        engine.Admit();
        bool completed = false;
        int sent = StreamAnswer(c, engine, fd, chat, model, max_tokens, &completed);
        engine.Finish(pt, sent, completed);
        LogAccess(peer, req, 200);
        return;
      } else {
        int pt = PromptTokens(in, chat);
        engine.Admit();
        if (!GenerateQuietly(engine, fd, max_tokens)) {
          engine.Finish(pt, 0, /*completed=*/false);
          return;
        }
        engine.Finish(pt, max_tokens, /*completed=*/true);
        if (!chat) {
          body = json({{"id", "cmpl-fake" + std::to_string(now)},
                       {"object", "text_completion"}, {"created", now}, {"model", model},
                       {"choices", json::array({{{"index", 0}, {"text", MakeText(c, max_tokens)},
                                                 {"logprobs", nullptr},
                                                 {"finish_reason", "length"},
                                                 {"stop_reason", nullptr}}})},
                       {"usage", {{"prompt_tokens", pt}, {"total_tokens", pt + max_tokens},
                                  {"completion_tokens", max_tokens}}}})
                     .dump();
        } else {
          body = json({{"id", "chatcmpl-fake" + std::to_string(now)},
                       {"object", "chat.completion"}, {"created", now}, {"model", model},
                       {"choices", json::array({{{"index", 0},
                                                 {"message", {{"role", "assistant"},
                                                              {"content", MakeText(c, max_tokens)},
                                                              {"tool_calls", json::array()}}},
                                                 {"logprobs", nullptr},
                                                 {"finish_reason", "length"},
                                                 {"stop_reason", nullptr}}})},
                       {"usage", {{"prompt_tokens", pt}, {"total_tokens", pt + max_tokens},
                                  {"completion_tokens", max_tokens}}}})
                     .dump();
        }
      }
    }
  } else if (path == "/health" || path == "/v1/models" || path == "/v1/completions" ||
             path == "/v1/chat/completions" || path == "/v1/embeddings" || path == "/metrics") {
    code = 405;
    body = json({{"detail", "Method Not Allowed"}}).dump();
  } else {
    code = 404;
    body = json({{"detail", "Not Found"}}).dump();
  }
  Respond(fd, code, body, ctype);
  LogAccess(peer, req, code);
}

// ---------------------------------------------------------------- main flow

void SpawnWorkers(Context* c) {
  for (int i = 0; i < c->sc.workers; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      if (c->sc.workers_escape_group) setsid();
      std::string name = "VllmWorker-" + std::to_string(i);
      prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
      signal(SIGTERM, SIG_DFL);
      // A worker idles until killed, holding (in real life) its device.
      for (;;) pause();
    }
    if (pid > 0) c->workers.push_back(pid);
  }
}

void StopWorkers(Context* c) {
  for (pid_t w : c->workers) kill(w, SIGKILL);
  for (pid_t w : c->workers) waitpid(w, nullptr, 0);
}

double ServiceNumber(const Context& c, const char* flag, const char* env, const char* key) {
  auto it = c.args.flags.find(flag);
  try {
    if (it != c.args.flags.end()) return std::stod(it->second);
    if (HasEnv(env)) return std::stod(GetEnv(env));
  } catch (const std::exception&) {
    Err(std::string("fake-vllm: ") + flag + " / " + env + " must be a number");
    exit(2);
  }
  return c.sc.service.value(key, 0.0);
}

ServiceModel ServiceModelOf(const Context& c) {
  ServiceModel m;
  m.ttft_ms = ServiceNumber(c, "--fake-ttft-ms", "FAKE_VLLM_TTFT_MS", "ttft_ms");
  m.token_delay_ms =
      ServiceNumber(c, "--fake-token-delay-ms", "FAKE_VLLM_TOKEN_DELAY_MS", "token_delay_ms");
  m.max_concurrency = static_cast<int>(
      ServiceNumber(c, "--fake-max-concurrency", "FAKE_VLLM_MAX_CONCURRENCY", "max_concurrency"));
  return m;
}

int Serve(Context* c) {
  std::string host = c->args.host;
  if (host.empty() || host == "0.0.0.0" || host == "::") host = "0.0.0.0";
  if (host == "localhost") host = "127.0.0.1";
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(c->args.port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    Err("OSError: [Errno -2] Name or service not known: '" + c->args.host + "'");
    return 1;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1024) != 0) {
    // uvicorn's message when the port is taken.
    Err("ERROR:    [Errno 98] error while attempting to bind on address ('" + host + "', " +
        std::to_string(c->args.port) + "): address already in use");
    return 1;
  }
  Log("INFO", "api_server.py:1457",
      "Starting vLLM API server 0 on http://" + c->args.host + ":" + std::to_string(c->args.port));
  fprintf(stdout, "INFO:     Started server process [%d]\n", getpid());
  fprintf(stdout, "INFO:     Waiting for application startup.\n");
  fprintf(stdout, "INFO:     Application startup complete.\n");
  fflush(stdout);

  static Engine* engine = new Engine(ServiceModelOf(*c));  // outlives the connection threads
  auto ready_at = std::chrono::steady_clock::now();
  auto next_repeat = ready_at;
  long repeats = 0, marks = 0;
  for (;;) {
    if (g_term && !c->sc.ignore_sigterm) break;
    if (!c->sc.repeat_line.empty() && std::chrono::steady_clock::now() >= next_repeat) {
      // The same line again and again: uvicorn's access lines of requests
      // on one keep-alive connection are alike to the byte.
      for (int i = 0; i < c->sc.repeat_burst; ++i) {
        fprintf(stdout, "%s\n", c->sc.repeat_line.c_str());
        if (c->sc.repeat_mark_every > 0 && ++repeats % c->sc.repeat_mark_every == 0) {
          fprintf(stdout, "fake-vllm: mark %ld\n", ++marks);
        }
      }
      fflush(stdout);
      next_repeat += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(std::max(0.01, c->sc.repeat_every_seconds)));
    }
    if (c->sc.crash_after_seconds > 0 &&
        std::chrono::steady_clock::now() - ready_at >=
            std::chrono::duration<double>(c->sc.crash_after_seconds)) {
      std::vector<std::string> lines = c->sc.crash_lines;
      if (lines.empty()) {
        // Seed 003 (问题 5) names this error; torch prints HIP errors so.
        lines = {"ERROR " + Stamp() + " [core.py:720] EngineCore encountered a fatal error.",
                 "RuntimeError: HIP error: invalid device function",
                 "HIP kernel errors might be asynchronously reported at some other API call, so "
                 "the stacktrace below might be incorrect."};
      }
      for (const auto& l : lines) Err(l);
      ReleaseDevices();  // the kernel frees a dead process's memory
      if (c->sc.crash_signal > 0) {
        signal(c->sc.crash_signal, SIG_DFL);
        raise(c->sc.crash_signal);
      }
      return c->sc.crash_exit_code;
    }
    pollfd p{fd, POLLIN, 0};
    int rc = poll(&p, 1, 50);
    if (rc <= 0) continue;
    sockaddr_in peer{};
    socklen_t plen = sizeof(peer);
    int cfd = accept4(fd, reinterpret_cast<sockaddr*>(&peer), &plen, SOCK_CLOEXEC);
    if (cfd < 0) continue;
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
    std::string who = std::string(ip) + ":" + std::to_string(ntohs(peer.sin_port));
    // One thread per connection: requests overlap as they do on a real
    // engine, and the service model decides who runs and who waits.
    std::thread([c, cfd, who] {
      Handle(*c, *engine, cfd, who);
      close(cfd);
    }).detach();
  }
  close(fd);
  fprintf(stdout, "INFO:     Shutting down\n");
  fprintf(stdout, "INFO:     Waiting for application shutdown.\n");
  fprintf(stdout, "INFO:     Application shutdown complete.\n");
  fprintf(stdout, "INFO:     Finished server process [%d]\n", getpid());
  fflush(stdout);
  StopWorkers(c);
  return 0;
}

int StartAndServe(Context* c, const std::vector<std::string>& argv, size_t first_arg) {
  std::string perr = ParseServerArgs(argv, first_arg, &c->args, c->sc.reject_args);
  if (c->args.served_names.empty()) c->args.served_names.push_back(c->args.model);

  std::vector<Failure> fail = c->sc.failures;
  std::stable_sort(fail.begin(), fail.end(),
                   [](const Failure& a, const Failure& b) { return StageOf(a) < StageOf(b); });
  auto fire_stage = [&](int stage) -> std::optional<int> {
    for (const auto& f : fail) {
      if (StageOf(f) == stage && Fires(*c, f)) {
        fflush(stdout);
        return EmitFailure(*c, f);
      }
    }
    return std::nullopt;
  };

  // Stage 0: `import vllm` (torch and its libraries load here).
  if (auto rc = fire_stage(0)) return *rc;
  if (!perr.empty()) {
    // argparse's usage error (exit status 2).
    Err("usage: api_server.py [-h] [--host HOST] [--port PORT] [--model MODEL] ...");
    Err("api_server.py: " + perr);
    return 2;
  }

  // Model directory: config.json and the shard count.
  if (IsDir(c->args.model)) {
    if (auto text = ReadFile(c->args.model + "/config.json")) {
      try {
        c->config = json::parse(*text);
        c->has_config = c->config.is_object();
      } catch (const std::exception& e) {
        Err("json.decoder.JSONDecodeError: " + std::string(e.what()));
        return 1;
      }
    }
    int n = 0;
    if (DIR* d = opendir(c->args.model.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.size() > 12 && name.substr(name.size() - 12) == ".safetensors") ++n;
      }
      closedir(d);
    }
    if (n > 0) c->shards = n;
  }
  if (c->sc.shards > 0) c->shards = c->sc.shards;
  if (!c->args.hf_overrides.empty()) {
    try {
      json o = json::parse(c->args.hf_overrides);
      if (o.is_object()) {
        if (!c->has_config) c->config = json::object();
        for (const auto& [k, v] : o.items()) c->config[k] = v;
        c->has_config = true;
      }
    } catch (const std::exception& e) {
      Err("api_server.py: error: argument --hf-overrides: Value " + c->args.hf_overrides +
          " cannot be converted to <function loads>.");
      return 2;
    }
  }

  // Stage 1: start-up logs.
  std::string platform = HasEnv("CUDA_VISIBLE_DEVICES") && !HasEnv("HIP_VISIBLE_DEVICES")
                             ? "cuda" : "rocm";
  Log("INFO", "__init__.py:244", "Automatically detected platform " + platform + ".");
  Log("INFO", "api_server.py:1395", "vLLM API server version " + c->version);
  std::string nondefault = "{";
  for (size_t i = 0; i < c->args.order.size(); ++i) {
    const auto& k = c->args.order[i];
    std::string key = k.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    nondefault += (i ? ", '" : "'") + key + "': '" + c->args.flags[k] + "'";
  }
  nondefault += "}";
  Log("INFO", "cli_args.py:325", "non-default args: " + nondefault);
  std::string arch = c->has_config && c->config.contains("architectures") &&
                             c->config["architectures"].is_array() &&
                             !c->config["architectures"].empty()
                         ? c->config["architectures"][0].get<std::string>()
                         : "LlamaForCausalLM";
  Log("INFO", "config.py:841",
      "This model supports multiple tasks: {'generate', 'embed', 'classify', 'reward'}. "
      "Defaulting to 'generate'.");
  Log("INFO", "core.py:69",
      "Initializing a V1 LLM engine (v" + c->version + ") with config: model='" + c->args.model +
          "', tokenizer='" + c->args.model + "', dtype=" + c->args.dtype +
          ", max_seq_len=" + std::to_string(c->args.max_model_len > 0 ? c->args.max_model_len : 40960) +
          ", tensor_parallel_size=" + std::to_string(c->args.tp) +
          ", enforce_eager=" + (c->args.enforce_eager ? "True" : "False") +
          ", served_model_name=" + c->args.served_names.front());
  SpawnWorkers(c);
  SleepSeconds(c->sc.startup_seconds);
  if (g_term) return 0;

  // Stage 2: device init (the free-memory rule). Torch opens the devices here.
  OpenDevices(*c);
  if (auto rc = fire_stage(2)) {
    StopWorkers(c);
    return *rc;
  }
  // Distributed init (vllm/distributed/parallel_state.py, pynccl.py; NCCL's
  // own INFO line as NCCL_DEBUG=INFO prints it).
  Log("INFO", "parallel_state.py:1032",
      "world_size=" + std::to_string(c->args.tp) +
          " rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:29500 backend=nccl");
  Log("INFO", "pynccl.py:70", "vLLM is using nccl==2.21.5");
  if (c->sc.hang_at == "distributed_init") {
    // A peer that never joins: ncclCommInitRank blocks forever, silently.
    fprintf(stdout, "fake-host:%d:%d [0] NCCL INFO ncclCommInitRank comm 0x5566 rank 0 nranks %d "
                    "cudaDev 0 busId 1000 - Init START\n", getpid(), getpid(), c->args.tp);
    fflush(stdout);
    while (!g_term) SleepSeconds(0.1);
    StopWorkers(c);
    return 0;
  }
  Log("INFO", "parallel_state.py:1076",
      "rank 0 in world size " + std::to_string(c->args.tp) + " is assigned as DP rank 0, PP rank 0, TP rank 0");
  // Stage 3: model construction (attention backend, head size).
  Log("INFO", "gpu_model_runner.py:1770", "Starting to load model " + c->args.model + "...");
  Log("INFO", "rocm.py:224", "Using Flash Attention backend on V1 engine.");
  if (auto rc = fire_stage(3)) {
    StopWorkers(c);
    return *rc;
  }
  // Stage 4: weights. tqdm redraws its bar with '\r' when not on a terminal.
  int n = c->shards;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i <= n; ++i) {
    if (i > 0) SleepSeconds(c->sc.load_seconds / n);
    if (g_term) return 0;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int pct = n ? static_cast<int>(std::lround(100.0 * i / n)) : 100;
    char line[256];
    if (i == 0) {
      snprintf(line, sizeof(line),
               "Loading safetensors checkpoint shards:   0%% Completed | 0/%d [00:00<?, ?it/s]", n);
    } else {
      double per = el / i;
      int rem = static_cast<int>(per * (n - i));
      snprintf(line, sizeof(line),
               "Loading safetensors checkpoint shards: %3d%% Completed | %d/%d [%02d:%02d<%02d:%02d, %5.2fs/it]",
               pct, i, n, static_cast<int>(el) / 60, static_cast<int>(el) % 60, rem / 60, rem % 60,
               per);
    }
    fprintf(stderr, "\r%s", line);
    fflush(stderr);
    if (i > 0 && (i == n)) fprintf(stderr, "\n");
  }
  if (auto rc = fire_stage(4)) {
    StopWorkers(c);
    return *rc;
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char tbuf[64];
  snprintf(tbuf, sizeof(tbuf), "%.2f", took);
  Log("INFO", "default_loader.py:272", std::string("Loading weights took ") + tbuf + " seconds");
  Log("INFO", "gpu_model_runner.py:1801", std::string("Model loading took 15.2661 GiB and ") + tbuf + " seconds");
  HoldDeviceBytes(*c, static_cast<long long>(15.2661 * 1073741824.0));
  // Stage 5: profiling / compilation. vLLM V1 logs the torch.compile cache
  // and then is silent while Inductor and Triton work; Triton writes one
  // cache directory per kernel under $TRITON_CACHE_DIR.
  if (c->sc.compile_seconds > 0 || c->sc.compile_files > 0) {
    Log("INFO", "backends.py:508",
        "Using cache directory: /tmp/fake-vllm/torch_compile_cache/0a1b2c3d4e/rank_0_0/backbone "
        "for vLLM's torch.compile");
    Log("INFO", "backends.py:519", "Dynamo bytecode transform time: 1.02 s");
    std::string cache = GetEnv("TRITON_CACHE_DIR");
    int files = std::max(c->sc.compile_files, 1);
    for (int i = 0; i < files && !g_term; ++i) {
      SleepSeconds(c->sc.compile_seconds / files);
      if (!cache.empty()) {
        std::string dir = cache + "/kernel" + std::to_string(i);
        mkdir(cache.c_str(), 0755);
        mkdir(dir.c_str(), 0755);
        if (FILE* f = fopen((dir + "/triton_.hsaco").c_str(), "w")) {
          fputs("fake kernel\n", f);
          fclose(f);
        }
      }
    }
    if (g_term) return 0;
    char tc[64];
    snprintf(tc, sizeof(tc), "%.2f", c->sc.compile_seconds + 1.02);
    Log("INFO", "monitor.py:34", std::string("torch.compile takes ") + tc + " s in total");
  }
  if (auto rc = fire_stage(5)) {
    StopWorkers(c);
    return *rc;
  }
  // Stage 6: KV cache sizing.
  if (auto rc = fire_stage(6)) {
    StopWorkers(c);
    return *rc;
  }
  if (c->args.kv_cache_memory_bytes) {
    Log("INFO", "gpu_worker.py:276",
        "Reserved " + std::to_string(*c->args.kv_cache_memory_bytes) +
            " bytes for the KV cache as requested (--kv-cache-memory-bytes)");
  }
  HoldDeviceFraction(*c, c->args.gpu_memory_utilization);
  Log("INFO", "gpu_worker.py:227", "Available KV cache memory: 39.43 GiB");
  Log("INFO", "kv_cache_utils.py:716", "GPU KV cache size: 646,000 tokens");
  Log("INFO", "kv_cache_utils.py:720",
      "Maximum concurrency for " + std::to_string(c->args.max_model_len > 0 ? c->args.max_model_len : 40960) +
          " tokens per request: 15.77x");
  if (c->sc.capture_graphs > 0 && !c->args.enforce_eager) {
    // tqdm, redrawn with '\r' (vllm/v1/worker/gpu_model_runner.py capture_model).
    int n = c->sc.capture_graphs;
    for (int i = 0; i <= n && !g_term; ++i) {
      if (i > 0) SleepSeconds(c->sc.capture_seconds / n);
      int pct = static_cast<int>(std::lround(100.0 * i / n));
      fprintf(stderr, "\rCapturing CUDA graph shapes: %3d%%| | %d/%d [00:00<00:00, 10.00it/s]", pct, i, n);
      fflush(stderr);
    }
    fprintf(stderr, "\n");
    if (g_term) return 0;
    Log("INFO", "gpu_model_runner.py:2326", "Graph capturing finished in 1 secs, took 0.45 GiB");
  }
  Log("INFO", "core.py:172", "init engine (profile, create kv cache, warmup model) took 3.21 seconds");
  if (auto rc = fire_stage(7)) {
    StopWorkers(c);
    return *rc;
  }
  Log("INFO", "api_server.py:1380", "Resolved architecture: " + arch);
  return Serve(c);
}

// The engine's device memory goes back however it ends (a start-up failure,
// SIGTERM, the end of serving).
int RunServer(Context* c, const std::vector<std::string>& argv, size_t first_arg) {
  int rc = StartAndServe(c, argv, first_arg);
  ReleaseDevices();
  return rc;
}

int PythonC(const Context& c, const std::string& code) {
  // Discovery runs `python -c "import vllm; print(vllm.__version__)"`.
  for (const char* pkg : {"vllm", "torch", "triton", "flash_attn"}) {
    if (code.find(std::string(pkg) + ".__version__") != std::string::npos) {
      std::string v = ReadDistVersion(c.site, pkg);
      if (v.empty()) {
        Err("Traceback (most recent call last):");
        Err("  File \"<string>\", line 1, in <module>");
        Err(std::string("ModuleNotFoundError: No module named '") + pkg + "'");
        return 1;
      }
      printf("%s\n", v.c_str());
      return 0;
    }
  }
  if (code.find("import") != std::string::npos || code.find("print") != std::string::npos) return 0;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  Context c;
  c.argv0 = ResolveArgv0(args[0]);
  // The env prefix: <prefix>/bin/python. The path is not resolved through
  // symlinks on purpose: bin/python may link to the build output.
  c.prefix = Dirname(Dirname(c.argv0));
  c.site = c.prefix + "/lib/python3.10/site-packages";
  if (!IsDir(c.site) && IsDir(c.prefix + "/lib/python3.10/dist-packages")) {
    c.site = c.prefix + "/lib/python3.10/dist-packages";
  }

  struct sigaction sa {};
  sa.sa_handler = OnTerm;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string scenario_path = GetEnv("FAKE_VLLM_SCENARIO");
  if (scenario_path.empty() && FileExists(c.prefix + "/share/fake-vllm/scenario.json")) {
    scenario_path = c.prefix + "/share/fake-vllm/scenario.json";
  }
  if (!scenario_path.empty()) {
    std::string error;
    if (!LoadScenario(scenario_path, &c.sc, &error)) {
      Err("fake-vllm: bad scenario file: " + error);
      return 3;
    }
  }
  if (c.sc.ignore_sigterm) signal(SIGTERM, SIG_IGN);
  // An exit() on the way (a bad flag found while serving) gives the device
  // memory back too; ReleaseDevices is a no-op once done.
  std::atexit([] { ReleaseDevices(); });
  std::string v = ReadDistVersion(c.site, "vllm");
  if (!v.empty()) c.version = v;
  if (!c.sc.vllm_version.empty()) c.version = c.sc.vllm_version;

  std::string vis = HasEnv("HIP_VISIBLE_DEVICES") ? GetEnv("HIP_VISIBLE_DEVICES")
                                                  : GetEnv("CUDA_VISIBLE_DEVICES");
  c.visible_devices = ParseDeviceList(vis);

  std::string base = Basename(args[0]);
  size_t i = 1;
  if (base == "vllm" || (args.size() > 1 && args[1] == "serve")) {
    // `vllm serve MODEL [args]`
    if (base == "vllm" && (args.size() < 2 || args[1] != "serve")) {
      Err("usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...");
      return 2;
    }
    i = 2;
    c.args.invocation = "vllm serve";
    if (i < args.size() && !StartsWith(args[i], "-")) {
      c.args.model = args[i];
      c.args.flags["--model"] = args[i];
      ++i;
    }
    return RunServer(&c, args, i);
  }
  // python [-u|-B|-E|-s] (-m MODULE | -c CODE | --version)
  while (i < args.size() && (args[i] == "-u" || args[i] == "-B" || args[i] == "-E" ||
                             args[i] == "-s" || args[i] == "-O")) {
    ++i;
  }
  if (i < args.size() && (args[i] == "--version" || args[i] == "-V")) {
    printf("Python 3.10.12\n");
    return 0;
  }
  if (i < args.size() && args[i] == "-c") {
    return PythonC(c, i + 1 < args.size() ? args[i + 1] : "");
  }
  if (i < args.size() && args[i] == "-m") {
    std::string module = i + 1 < args.size() ? args[i + 1] : "";
    i += 2;
    if (module == "vllm.entrypoints.openai.api_server") {
      c.args.invocation = "python -m " + module;
      return RunServer(&c, args, i);
    }
    if (module == "vllm.entrypoints.cli.main" && i < args.size() && args[i] == "serve") {
      ++i;
      if (i < args.size() && !StartsWith(args[i], "-")) {
        c.args.model = args[i];
        c.args.flags["--model"] = args[i];
        ++i;
      }
      return RunServer(&c, args, i);
    }
    Err(c.argv0 + ": No module named " + module);
    return 1;
  }
  if (i < args.size() && StartsWith(args[i], "--")) {
    // Called directly as fake_vllm --model ... (tests).
    return RunServer(&c, args, i);
  }
  Err("usage: " + base + " -m vllm.entrypoints.openai.api_server [args] | vllm serve MODEL [args]");
  return 2;
}
