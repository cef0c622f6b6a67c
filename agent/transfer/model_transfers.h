#pragma once

// The agent's running and finished model copies (issue 19): a
// FetchModelCommand from the controller starts one on its own thread
// (ModelFetcher over a PeerModelSource, an HttpModelSource for a mirror, or
// a DirectoryModelSource for a shared file system's mount); Snapshot() is
// what NodeInventory.transfers reports with every status. One transfer per model directory at
// a time (ModelFetcher's lock refuses a second, and so does Start).

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/fetch/model_fetch.h"
#include "dcufleet/v1/node.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

class ModelTransfers {
 public:
  using CredentialsFn = std::function<std::shared_ptr<grpc::ChannelCredentials>(const std::string& address)>;
  // `model_root`: where copies land (the agent's first --model-root).
  // `on_finished`: called (on the transfer's thread) after each copy ends,
  // so the agent rescans its model roots for the next report.
  // `tls`: peers are dialled over TLS (their certificates name the node).
  // `shared_roots`: directories on this node's own file system (a shared
  // file system's mounts, dcu-agent --shared-model-root) that a command may
  // name as its source_dir; any other directory is refused.
  ModelTransfers(std::string model_root, CredentialsFn credentials, bool tls = false,
                 std::function<void()> on_finished = {}, std::vector<std::string> shared_roots = {});
  ~ModelTransfers();

  // Starts copying. FAILED_PRECONDITION without a model root;
  // INVALID_ARGUMENT for a hostile name or address; PERMISSION_DENIED for a
  // source_dir that is not one of the shared roots; ALREADY_EXISTS when the
  // directory is already in the root; ABORTED when a copy of it runs.
  absl::Status Start(const dcufleet::v1::FetchModelCommand& command) ABSL_LOCKS_EXCLUDED(mu_);

  // Every copy this agent ran (the last per model directory), running first.
  std::vector<dcufleet::v1::ModelTransfer> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels running copies (their .part files stay) and joins the threads.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run(dcufleet::v1::FetchModelCommand command, ModelSource& source) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string model_root_;
  const CredentialsFn credentials_;
  const bool tls_;
  const std::function<void()> on_finished_;
  const std::vector<std::string> shared_roots_;
  ModelFetcher fetcher_;
  std::atomic<bool> stopping_{false};
  mutable absl::Mutex mu_;
  std::map<std::string, dcufleet::v1::ModelTransfer> transfers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::agent
