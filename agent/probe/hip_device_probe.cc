#include "agent/probe/hip_device_probe.h"

#include <unistd.h>

#include <cerrno>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/probe/findings.h"
#include "agent/probe/memory_reading.h"
#include "agent/probe/pci_bus.h"
#include "common/arch.h"

extern char** environ;

namespace dcu::agent {
namespace {

using dcufleet::v1::Device;

// The last "step X device N" line the helper wrote before it went quiet.
std::string LastStep(const std::string& stderr_data) {
  std::string last;
  for (absl::string_view line : absl::StrSplit(stderr_data, '\n')) {
    if (absl::ConsumePrefix(&line, "step ")) last = std::string(line);
  }
  return last;
}

}  // namespace

std::string DefaultMemprobePath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "dcu-memprobe";
  std::string exe(buf, static_cast<size_t>(n));
  size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "dcu-memprobe" : exe.substr(0, slash + 1) + "dcu-memprobe";
}

absl::StatusOr<ProbeReport> ParseMemprobeOutput(const common::ProcessOutput& out, absl::Duration timeout,
                                                int64_t now_ms, absl::string_view runtime) {
  const bool cuda = runtime == "cuda";
  // Sources name the call each figure came from.
  const std::string mem_src = cuda ? "cuda:cuMemGetInfo" : "hip:hipMemGetInfo";
  const std::string name_src = cuda ? "cuda:cuDeviceGetName" : "hip:hipDeviceGetName";
  const std::string arch_src = cuda ? "cuda:cuDeviceGetAttribute(compute_capability)" : "hip:gcnArchName";
  ProbeReport report;
  bool done = false;
  std::string fatal;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(out.stdout_data, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      report.findings.push_back(MakeFinding(kWarning, kFileMalformed, "dcu-memprobe",
                                            absl::StrCat("memprobe output line ", line_no, " is not JSON: ",
                                                         line.substr(0, 120))));
      continue;
    }
    if (!j.is_object()) continue;
    try {
      if (j.contains("done")) {
        done = true;
      } else if (j.contains("index")) {
        Device dev;
        dev.set_index(j["index"].get<int>());
        if (cuda) dev.set_vendor("nvidia");
        if (j.contains("pci_bus")) dev.set_pci_bus(NormalizePciBusId(j["pci_bus"].get<std::string>()));
        if (j.contains("uuid")) dev.set_unique_id(j["uuid"].get<std::string>());
        if (j.contains("name")) {
          dev.set_product_name(j["name"].get<std::string>());
          dev.set_product_name_source(name_src);
        }
        if (j.contains("arch")) {
          std::string raw = j["arch"].get<std::string>();
          auto arch = common::NormalizeArch(raw);
          if (arch.ok()) {
            dev.set_arch(*arch);
            dev.set_arch_source(arch_src);
          } else {
            *dev.add_findings() = MakeFinding(kWarning, kArchRejected, arch_src,
                                              absl::StrCat("rejected arch '", raw.substr(0, 40), "' from ", arch_src,
                                                           ": ", arch.status().message()));
          }
        }
        if (j.contains("error")) {
          *dev.add_findings() = MakeFinding(kWarning, kProbeFailed, mem_src,
                                            absl::StrCat("device ", dev.index(), ": ", j["error"].get<std::string>()));
        } else if (j.contains("free") && j.contains("total")) {
          *dev.mutable_device_free() = MakeReading(j["free"].get<int64_t>(), mem_src, now_ms);
          *dev.mutable_device_total() = MakeReading(j["total"].get<int64_t>(), mem_src, now_ms);
          if (j.contains("self_used")) {
            *dev.mutable_device_self_used() =
                MakeReading(j["self_used"].get<int64_t>(),
                        absl::StrCat(j.value("self_source", std::string("nvml")), " (the helper's own context)"), now_ms);
          }
        }
        report.devices.push_back(std::move(dev));
      } else if (j.contains("error")) {
        fatal = j["error"].get<std::string>();
      }
    } catch (const nlohmann::json::exception& e) {
      report.findings.push_back(MakeFinding(kWarning, kFileMalformed, "dcu-memprobe",
                                            absl::StrCat("memprobe output line ", line_no, ": ", e.what())));
    }
  }
  if (out.timed_out) {
    std::string step = LastStep(out.stderr_data);
    std::string msg = absl::StrCat("dcu-memprobe (", runtime, ") did not finish within ", absl::FormatDuration(timeout),
                                   step.empty() ? "" : absl::StrCat(" (hung in ", step, ")"),
                                   "; it was killed, the agent is unaffected");
    if (report.devices.empty()) return absl::DeadlineExceededError(msg);
    report.findings.push_back(MakeFinding(kWarning, kProbeTimeout, std::string(runtime), msg));
    return report;
  }
  if (!fatal.empty()) return absl::UnavailableError(absl::StrCat("dcu-memprobe: ", fatal));
  if (!done && report.devices.empty()) {
    return absl::UnavailableError(absl::StrCat("dcu-memprobe ended (exit ", out.exit_code,
                                               out.term_signal ? absl::StrCat(", signal ", out.term_signal) : "",
                                               ") without a report: ", out.stderr_data.substr(0, 300)));
  }
  if (!done) {
    report.findings.push_back(MakeFinding(kWarning, kProbeFailed, std::string(runtime),
                                          absl::StrCat("dcu-memprobe ended early (exit ", out.exit_code,
                                                       out.term_signal ? absl::StrCat(", signal ", out.term_signal) : "",
                                                       ") after ", report.devices.size(), " device(s)")));
  }
  if (report.devices.empty()) {
    return absl::NotFoundError(cuda ? "CUDA sees no devices (cuDeviceGetCount = 0)"
                                    : "HIP sees no devices (hipGetDeviceCount = 0)");
  }
  return report;
}

HipDeviceProbe::HipDeviceProbe(HipProbeOptions options) : options_(std::move(options)) {
  if (options_.memprobe_path.empty()) options_.memprobe_path = DefaultMemprobePath();
  if (!options_.runner) {
    owned_runner_ = std::make_unique<common::SubprocessRunner>();
    options_.runner = owned_runner_.get();
  }
  if (!options_.clock) options_.clock = &common::RealClock::Get();
}

int HipDeviceProbe::runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

void HipDeviceProbe::Invalidate() {
  absl::MutexLock lock(&mu_);
  cached_.reset();
}

absl::StatusOr<std::vector<Device>> HipDeviceProbe::Enumerate() {
  auto r = Probe();
  if (!r.ok()) return r.status();
  return std::move(r->devices);
}

absl::StatusOr<ProbeReport> HipDeviceProbe::Probe() {
  {
    absl::MutexLock lock(&mu_);
    if (cached_ && options_.clock->Now() - cached_at_ < options_.ttl) return *cached_;
  }
  // The helper runs without mu_ held: a 20 s timeout must not block readers
  // of a still-fresh cache on other threads for longer than needed.
  absl::StatusOr<ProbeReport> result = RunOnce();
  absl::MutexLock lock(&mu_);
  ++runs_;
  cached_ = result;
  cached_at_ = options_.clock->Now();
  return result;
}

absl::StatusOr<ProbeReport> HipDeviceProbe::RunOnce() {
  if (access(options_.memprobe_path.c_str(), X_OK) != 0) {
    return absl::UnavailableError(
        absl::StrCat("memprobe helper '", options_.memprobe_path, "' is not executable: ", strerror(errno)));
  }
  std::vector<std::string> argv = {options_.memprobe_path};
  if (options_.runtime != "hip") {
    argv.push_back("--runtime");
    argv.push_back(options_.runtime);
  }
  if (!options_.hip_library.empty() && options_.runtime == "hip") {
    argv.push_back("--hip_library");
    argv.push_back(options_.hip_library);
  }
  if (options_.runtime == "cuda") {
    if (!options_.cuda_library.empty()) {
      argv.push_back("--cuda_library");
      argv.push_back(options_.cuda_library);
    }
    if (!options_.nvml_library.empty()) {
      argv.push_back("--nvml_library");
      argv.push_back(options_.nvml_library);
    }
  }
  common::ProcessOptions po;
  po.timeout = options_.timeout;
  po.max_output_bytes = 1 << 20;
  // The helper must see every device: drop the variables that narrow the
  // runtime's view (the agent itself may run under one).
  po.replace_env = true;
  for (char** e = environ; e && *e; ++e) {
    absl::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) continue;
    absl::string_view k = kv.substr(0, eq);
    if (k == "HIP_VISIBLE_DEVICES" || k == "ROCR_VISIBLE_DEVICES" || k == "CUDA_VISIBLE_DEVICES" ||
        k == "GPU_DEVICE_ORDINAL") {
      continue;
    }
    po.env[std::string(k)] = std::string(kv.substr(eq + 1));
  }
  auto out = options_.runner->Run(argv, po);
  if (!out.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot run '", options_.memprobe_path, "': ", out.status().message()));
  }
  return ParseMemprobeOutput(*out, options_.timeout, absl::ToUnixMillis(options_.clock->Now()), options_.runtime);
}

}  // namespace dcu::agent
