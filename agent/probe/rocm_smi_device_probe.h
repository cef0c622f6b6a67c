#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agent/probe/device_probe.h"
#include "agent/probe/product_table.h"
#include "common/clock.h"

namespace dcu::agent {

// The directories searched for librocm_smi64, in order, as a process
// launched with DTK's usual environment would search them: /opt/hyhal/lib
// comes before /opt/dtk/.hyhal/rocm_smi/lib because that is the order that
// broke the second seed (its /opt/hyhal/lib/librocm_smi64.so.2 lacks
// rsmi_init); the probe's job is to notice that and name the fix.
std::vector<std::string> DefaultRocmSmiSearchDirs();

struct RocmSmiOptions {
  // Filesystem root; search dirs are resolved under it (tests use a tree).
  std::string root = "/";
  // Host paths ("/opt/hyhal/lib"), searched in order. Empty = defaults.
  std::vector<std::string> search_dirs;
  // File names tried in each directory, in order.
  std::vector<std::string> library_names = {"librocm_smi64.so.2", "librocm_smi64.so",
                                            "librocm_smi64.so.7", "librocm_smi64.so.6",
                                            "librocm_smi64.so.5", "librocm_smi64.so.1"};
  const ProductTable* products = nullptr;
  const common::Clock* clock = nullptr;
};

// One librocm_smi64 found on the search path and what it exports.
struct RocmSmiCandidate {
  std::string host_path;    // "/opt/hyhal/lib/librocm_smi64.so.2"
  std::string local_path;   // the same under the root
  std::string dir;          // "/opt/hyhal/lib"
  bool loadable = false;
  std::string load_error;   // dlerror() when not loadable
  bool has_rsmi_init = false;
  bool has_memory_calls = false;  // rsmi_dev_memory_{total,usage}_get
  bool usable() const { return loadable && has_rsmi_init && has_memory_calls; }
};

// Host view through librocm_smi64, loaded with dlopen (never linked), so one
// agent binary runs on hosts with and without DTK/ROCm. Every symbol is
// checked before use. When the first library in search order lacks
// rsmi_init and a later one has it, Probe() reports a node finding
// "rocm_smi_library_conflict" naming both files and the LD_LIBRARY_PATH order
// that fixes it (RecommendedLdLibraryPath()), then probes with the good one.
class RocmSmiDeviceProbe : public DeviceProbe {
 public:
  // UNAVAILABLE when no usable library is on the search path (the message
  // lists what was found and why each was refused).
  static absl::StatusOr<std::unique_ptr<RocmSmiDeviceProbe>> Create(RocmSmiOptions options);
  ~RocmSmiDeviceProbe() override;

  std::string Name() const override { return "rocm_smi"; }
  absl::StatusOr<std::vector<dcufleet::v1::Device>> Enumerate() override;
  absl::StatusOr<ProbeReport> Probe() override;

  // Every candidate seen, in search order.
  const std::vector<RocmSmiCandidate>& candidates() const { return candidates_; }
  // The library in use (host path).
  const std::string& library() const { return chosen_.host_path; }
  // Search dirs with the one holding a good library first; empty when the
  // default order already resolves a good one.
  const std::vector<std::string>& RecommendedLdLibraryPath() const { return recommended_; }

  // Looks at every candidate on the path without choosing (for
  // diagnostics); never fails.
  static std::vector<RocmSmiCandidate> Inspect(const RocmSmiOptions& options);

 private:
  struct Api;
  explicit RocmSmiDeviceProbe(RocmSmiOptions options);

  RocmSmiOptions options_;
  std::vector<RocmSmiCandidate> candidates_;
  RocmSmiCandidate chosen_;
  std::vector<std::string> recommended_;
  std::vector<dcufleet::v1::Finding> node_findings_;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  absl::Mutex mu_;
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace dcu::agent
