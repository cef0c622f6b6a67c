#pragma once

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/process_runner.h"
#include "dcufleet/v1/types.pb.h"
#include "modelkit/weights_audit.h"

namespace dcu::agent {

// What a node has to run models with: model directories under the model
// roots (each audited, with its config.json text and entries so the
// controller can audit against the catalog), conda envs under the env roots,
// and container images the container CLI lists.
struct DiscoveryOptions {
  std::vector<std::string> model_roots;
  std::vector<std::string> env_roots;
  // "docker", "podman" or "" (no container discovery).
  std::string container_cli;
  // Rescan at most this often; Scan(force=true) ignores it.
  absl::Duration rescan_interval = absl::Seconds(30);
  size_t max_config_bytes = 256 * 1024;
};

class NodeDiscovery {
 public:
  NodeDiscovery(DiscoveryOptions options, common::ProcessRunner* runner);
  // Fills models and environments of `inventory` from the last scan,
  // rescanning when it is older than the interval.
  void Fill(dcufleet::v1::NodeInventory* inventory, bool force = false) ABSL_LOCKS_EXCLUDED(mu_);

  // One model directory as reported (audit summary, config text, entries,
  // the weights verification). `weights_cache` (may be null) remembers the
  // header checks by (name, size, mtime) of every shard, so a rescan of an
  // unchanged directory reads no header again.
  static dcufleet::v1::ModelDirectory ScanModelDirectory(
      const std::string& path, size_t max_config_bytes,
      modelkit::WeightsAuditCache* weights_cache = nullptr);
  // Images the container CLI lists, as RuntimeEnvironments.
  static std::vector<dcufleet::v1::RuntimeEnvironment> ListImages(const std::string& cli,
                                                                  common::ProcessRunner* runner,
                                                                  std::vector<std::string>* notes);

 private:
  const DiscoveryOptions options_;
  common::ProcessRunner* const runner_;
  modelkit::WeightsAuditCache weights_cache_;
  absl::Mutex mu_;
  bool scanned_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time scanned_at_ ABSL_GUARDED_BY(mu_);
  std::vector<dcufleet::v1::ModelDirectory> models_ ABSL_GUARDED_BY(mu_);
  std::vector<dcufleet::v1::RuntimeEnvironment> envs_ ABSL_GUARDED_BY(mu_);
  std::vector<dcufleet::v1::Finding> findings_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::agent
