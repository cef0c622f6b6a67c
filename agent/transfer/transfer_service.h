#pragma once

// The agent's side of node-to-node model transfer (issue 19): serves the
// model directories under its model roots to peers (ModelTransferService,
// transfer.proto), and PeerModelSource, the ModelSource a fetching agent
// reads a peer through. Names go through DirectoryModelSource::Resolve, the
// one confinement rule: one path component for the model, plain relative
// components for files, symlinks only when they resolve inside the model's
// directory.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/fetch/model_source.h"
#include "common/tls_config.h"
#include "dcufleet/v1/transfer.grpc.pb.h"

namespace dcu::agent {

class ModelTransferServiceImpl final : public dcufleet::v1::ModelTransferService::Service {
 public:
  // `require_node_peer`: refuse (PERMISSION_DENIED) callers without a
  // verified client certificate whose subject has O=node (TLS on).
  // `max_bytes_per_second` > 0 caps each read's rate (a copy must not
  // starve the node's serving traffic); 0: no cap.
  ModelTransferServiceImpl(std::string node_name, std::vector<std::string> model_roots,
                           bool require_node_peer, size_t chunk_bytes = 1 << 20,
                           int64_t max_bytes_per_second = 0);

  grpc::Status ListModelFiles(grpc::ServerContext* ctx, const dcufleet::v1::ListModelFilesRequest* req,
                              dcufleet::v1::ListModelFilesResponse* resp) override;
  grpc::Status ReadModelFile(grpc::ServerContext* ctx, const dcufleet::v1::ReadModelFileRequest* req,
                             grpc::ServerWriter<dcufleet::v1::ModelFileChunk>* writer) override;

 private:
  grpc::Status CheckPeer(const grpc::ServerContext& ctx) const;
  // The root whose <root>/<model> is a directory; NOT_FOUND naming the roots.
  absl::StatusOr<DirectoryModelSource*> SourceFor(const std::string& model);

  const std::string node_name_;
  const bool require_node_peer_;
  const int64_t max_bytes_per_second_;
  std::vector<std::unique_ptr<DirectoryModelSource>> sources_;
  std::vector<std::string> roots_;
};

// Server credentials for --transfer-listen: with TLS files, the node's own
// certificate and key, client certificates required and verified against
// the fleet CA (`files.client_ca`); INVALID_ARGUMENT naming the flag when a
// file is missing or bad.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTransferServerCredentials(
    const common::ServerTlsFiles& files);

// A peer agent's model directories over ModelTransferService. Each call has
// a deadline (`list_timeout` for a listing; a read has no overall deadline
// but fails UNAVAILABLE when the stream breaks, which ModelFetcher keeps
// for a resume).
class PeerModelSource : public ModelSource {
 public:
  // `tls`: the peer's certificate names the node (CN), not its address, so
  // the TLS target name is `peer_name`.
  PeerModelSource(std::string address, std::shared_ptr<grpc::ChannelCredentials> creds,
                  std::string peer_name = "", bool tls = false);
  std::string Describe() const override;
  absl::StatusOr<std::vector<SourceFile>> List(const std::string& model) override;
  absl::Status Read(const std::string& model, const std::string& name, int64_t offset,
                    const std::function<absl::Status(absl::string_view)>& sink) override;

 private:
  const std::string address_;
  std::string peer_name_;
  const bool tls_;
  std::unique_ptr<dcufleet::v1::ModelTransferService::Stub> stub_;
  // A failed TLS handshake says only "certificate verify failed"; this adds
  // what to check.
  absl::Status Explained(absl::Status s) const;
};

}  // namespace dcu::agent
