#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "gateway/replica_source.h"

namespace dcu::gateway {

// Parses a replicas file:
//   {"models": [{"deployment": "qwen3-32b", "served_model_name": "Qwen/Qwen3-32B",
//                "replicas": [{"host": "127.0.0.1", "port": 8001,
//                              "node": "n1", "ready": true}]}]}
// "served_model_name", "node" and "ready" (default true) are optional.
// INVALID_ARGUMENT naming the first bad field.
absl::StatusOr<ServingSet> ParseReplicasJson(const std::string& text);

// A static set from a file (tests, the benchmark, a fleet without the
// controller). The file is read again when it changes, so an operator (or a
// test) can add and remove replicas; a change that does not parse is logged
// and the previous set kept.
class FileReplicaSource : public ReplicaSource {
 public:
  explicit FileReplicaSource(std::string path) : path_(std::move(path)) {}
  ~FileReplicaSource() override { Stop(); }
  absl::Status Start(UpdateFn on_update) override;
  void Stop() override;

 private:
  absl::StatusOr<ServingSet> Read(std::string* fingerprint) const;

  const std::string path_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace dcu::gateway
