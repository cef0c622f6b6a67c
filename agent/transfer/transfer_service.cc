#include "agent/transfer/transfer_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_util.h"

namespace dcu::agent {
namespace {
namespace fs = std::filesystem;

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}
absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// The value of `key` in an RFC 2253 subject ("CN=node-a,O=node").
std::string SubjectField(absl::string_view subject, absl::string_view key) {
  std::string cur;
  std::vector<std::string> parts;
  for (size_t i = 0; i < subject.size(); ++i) {
    char c = subject[i];
    if (c == '\\' && i + 1 < subject.size()) {
      cur.push_back(subject[++i]);
    } else if (c == ',' || c == '+') {
      parts.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  parts.push_back(std::move(cur));
  for (const std::string& p : parts) {
    absl::string_view v = absl::StripAsciiWhitespace(p);
    if (absl::ConsumePrefix(&v, key) && absl::ConsumePrefix(&v, "=")) return std::string(v);
  }
  return "";
}

}  // namespace

ModelTransferServiceImpl::ModelTransferServiceImpl(std::string node_name, std::vector<std::string> model_roots,
                                                   bool require_node_peer, size_t chunk_bytes,
                                                   int64_t max_bytes_per_second)
    : node_name_(std::move(node_name)),
      require_node_peer_(require_node_peer),
      max_bytes_per_second_(max_bytes_per_second),
      roots_(std::move(model_roots)) {
  for (const auto& r : roots_) sources_.push_back(std::make_unique<DirectoryModelSource>(r, chunk_bytes));
}

grpc::Status ModelTransferServiceImpl::CheckPeer(const grpc::ServerContext& ctx) const {
  if (!require_node_peer_) return grpc::Status::OK;
  auto auth = ctx.auth_context();
  std::string subject;
  if (auth) {
    for (const auto& v : auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) {
      subject.assign(v.data(), v.size());
    }
  }
  if (subject.empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "model transfer needs a node certificate of the fleet CA");
  }
  if (SubjectField(subject, "O") != "node") {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("model transfer is for nodes only; the certificate '", subject,
                                     "' is not a node's (O=node)"));
  }
  return grpc::Status::OK;
}

absl::StatusOr<DirectoryModelSource*> ModelTransferServiceImpl::SourceFor(const std::string& model) {
  DCU_RETURN_IF_ERROR(CheckModelDirName(model));
  std::error_code ec;
  for (size_t i = 0; i < roots_.size(); ++i) {
    fs::path p = fs::path(roots_[i]) / model;
    if (fs::is_directory(p, ec) && !fs::is_symlink(p, ec)) return sources_[i].get();
  }
  return absl::NotFoundError(absl::StrCat("node '", node_name_, "' has no model directory '", model, "' under ",
                                          roots_.empty() ? "(no model roots)" : absl::StrJoin(roots_, ", ")));
}

grpc::Status ModelTransferServiceImpl::ListModelFiles(grpc::ServerContext* ctx,
                                                      const dcufleet::v1::ListModelFilesRequest* req,
                                                      dcufleet::v1::ListModelFilesResponse* resp) {
  if (auto s = CheckPeer(*ctx); !s.ok()) return s;
  auto source = SourceFor(req->model());
  if (!source.ok()) return ToGrpc(source.status());
  auto files = (*source)->List(req->model());
  if (!files.ok()) return ToGrpc(files.status());
  for (const auto& f : *files) {
    auto* e = resp->add_files();
    e->set_name(f.name);
    e->set_size(f.size);
  }
  resp->set_node_name(node_name_);
  return grpc::Status::OK;
}

grpc::Status ModelTransferServiceImpl::ReadModelFile(grpc::ServerContext* ctx,
                                                     const dcufleet::v1::ReadModelFileRequest* req,
                                                     grpc::ServerWriter<dcufleet::v1::ModelFileChunk>* writer) {
  if (auto s = CheckPeer(*ctx); !s.ok()) return s;
  auto source = SourceFor(req->model());
  if (!source.ok()) return ToGrpc(source.status());
  dcufleet::v1::ModelFileChunk chunk;
  const absl::Time started = absl::Now();
  int64_t sent = 0;
  absl::Status s = (*source)->Read(req->model(), req->name(), req->offset(), [&](absl::string_view data) {
    if (ctx->IsCancelled()) return absl::CancelledError("the peer cancelled the read");
    if (max_bytes_per_second_ > 0) {
      // Sleep until the bytes sent so far are due at the cap.
      const absl::Time due = started + absl::Seconds(static_cast<double>(sent) / max_bytes_per_second_);
      if (due > absl::Now()) absl::SleepFor(due - absl::Now());
    }
    sent += static_cast<int64_t>(data.size());
    chunk.set_data(data.data(), data.size());
    if (!writer->Write(chunk)) return absl::UnavailableError("the peer went away");
    return absl::OkStatus();
  });
  return ToGrpc(s);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTransferServerCredentials(
    const common::ServerTlsFiles& files) {
  if (files.cert.empty() || files.key.empty() || files.client_ca.empty()) {
    return absl::InvalidArgumentError("--transfer-listen over TLS needs --tls-ca, --tls-cert and --tls-key");
  }
  DCU_ASSIGN_OR_RETURN(std::string cert, common::ReadCertificatePem(files.cert, "--tls-cert"));
  DCU_ASSIGN_OR_RETURN(std::string key, common::ReadPrivateKeyPem(files.key, "--tls-key"));
  DCU_RETURN_IF_ERROR(common::CheckKeyMatchesCertificate(cert, key, files.cert, files.key));
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  DCU_ASSIGN_OR_RETURN(options.pem_root_certs, common::ReadCertificatePem(files.client_ca, "--tls-ca"));
  options.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(options);
}

PeerModelSource::PeerModelSource(std::string address, std::shared_ptr<grpc::ChannelCredentials> creds,
                                 std::string peer_name, bool tls)
    : address_(std::move(address)), peer_name_(std::move(peer_name)), tls_(tls) {
  // Chunks are 1 MiB; DefaultChannelArguments allows 16 MiB messages.
  grpc::ChannelArguments args = common::DefaultChannelArguments();
  if (tls && !peer_name_.empty()) args.SetSslTargetNameOverride(peer_name_);
  stub_ = dcufleet::v1::ModelTransferService::NewStub(grpc::CreateCustomChannel(address_, creds, args));
}

absl::Status PeerModelSource::Explained(absl::Status s) const {
  if (!tls_ || !absl::StrContains(s.message(), "certificate verify failed")) return s;
  return absl::Status(
      s.code(),
      absl::StrCat(s.message(), " (TLS between nodes: both must hold node certificates of the same "
                                "fleet CA, and the source's must name node '",
                   peer_name_,
                   "'; node certificates from 'dcuctl pki issue node' before 2026-12-06 could not "
                   "serve copies: issue the source's again)"));
}

std::string PeerModelSource::Describe() const {
  if (peer_name_.empty()) return absl::StrCat("agent at ", address_);
  return absl::StrCat("node '", peer_name_, "' (", address_, ")");
}

absl::StatusOr<std::vector<SourceFile>> PeerModelSource::List(const std::string& model) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  dcufleet::v1::ListModelFilesRequest req;
  req.set_model(model);
  dcufleet::v1::ListModelFilesResponse resp;
  grpc::Status s = stub_->ListModelFiles(&ctx, req, &resp);
  if (!s.ok()) return Explained(FromGrpc(s));
  if (peer_name_.empty()) peer_name_ = resp.node_name();
  std::vector<SourceFile> out;
  for (const auto& e : resp.files()) out.push_back({e.name(), e.size()});
  return out;
}

absl::Status PeerModelSource::Read(const std::string& model, const std::string& name, int64_t offset,
                                   const std::function<absl::Status(absl::string_view)>& sink) {
  grpc::ClientContext ctx;
  dcufleet::v1::ReadModelFileRequest req;
  req.set_model(model);
  req.set_name(name);
  req.set_offset(offset);
  auto reader = stub_->ReadModelFile(&ctx, req);
  dcufleet::v1::ModelFileChunk chunk;
  absl::Status sunk;
  while (reader->Read(&chunk)) {
    sunk = sink(chunk.data());
    if (!sunk.ok()) {
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status s = reader->Finish();
  if (!sunk.ok()) return sunk;
  if (!s.ok()) {
    absl::Status a = FromGrpc(s);
    // A broken stream is the network's doing: the fetcher keeps the bytes.
    if (a.code() == absl::StatusCode::kCancelled || a.code() == absl::StatusCode::kDeadlineExceeded ||
        a.code() == absl::StatusCode::kInternal) {
      return absl::UnavailableError(absl::StrCat(Describe(), ": ", a.message()));
    }
    return absl::Status(a.code(), absl::StrCat(Describe(), ": ", a.message()));
  }
  return absl::OkStatus();
}

}  // namespace dcu::agent
