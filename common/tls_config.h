#pragma once

// TLS material for dcufleet's three programs: PEM files loaded and checked
// (parseable, not expired, key matches certificate, private files not
// readable by group or others) before gRPC sees them, so a bad set-up fails
// at start-up with the file named, not later as an opaque handshake error.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace dcu::common {

// Largest message a server accepts and a client sends (inventories of big
// nodes with process tables stay well below it). Anything larger is refused
// by gRPC with RESOURCE_EXHAUSTED before our code sees it.
inline constexpr int kMaxRequestBytes = 16 << 20;
// Largest response dcuctl accepts (a fleet listing can be large).
inline constexpr int kMaxResponseBytes = 64 << 20;
// A bearer token file larger than this is not a token.
inline constexpr size_t kMaxTokenBytes = 4096;

// What one X.509 certificate says about itself.
struct CertificateInfo {
  std::string common_name;
  // The subject's organization (O=); dcufleet puts the role there.
  std::string organization;
  absl::Time not_before;
  absl::Time not_after;
};

// Refuses a file that holds a secret (private key, token) when group or
// others may read or write it: FAILED_PRECONDITION naming the file and its
// mode, with the chmod that fixes it. NOT_FOUND / PERMISSION_DENIED when it
// cannot be stat'ed.
absl::Status CheckSecretFileMode(const std::string& path, absl::string_view what);

// Reads a PEM file named by `flag` (messages say "--tls-cert 'path': ...").
// Certificates must hold at least one parseable certificate, none expired;
// private keys must parse and pass CheckSecretFileMode.
absl::StatusOr<std::string> ReadCertificatePem(const std::string& path, absl::string_view flag);
absl::StatusOr<std::string> ReadPrivateKeyPem(const std::string& path, absl::string_view flag);

// The first certificate in `pem`. INVALID_ARGUMENT when none parses.
absl::StatusOr<CertificateInfo> InspectCertificate(absl::string_view pem);

// INVALID_ARGUMENT when `key_pem` is not the private key of `cert_pem`.
absl::Status CheckKeyMatchesCertificate(absl::string_view cert_pem, absl::string_view key_pem,
                                        absl::string_view cert_path, absl::string_view key_path);

// Reads a bearer token: the file's content without surrounding whitespace.
// The file must pass CheckSecretFileMode, be at most kMaxTokenBytes and hold
// one line of printable ASCII without spaces (what goes into an HTTP/2 header).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Server side: the controller's certificate and key, and optionally the CA
// that signs client certificates (agents, people). With a client CA, client
// certificates are requested and verified when presented (a dcuctl using a
// bearer token presents none); without one they are not requested.
struct ServerTlsFiles {
  std::string cert;
  std::string key;
  std::string client_ca;
  bool enabled() const { return !cert.empty() || !key.empty() || !client_ca.empty(); }
};
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files);

// Client side: the CA that signed the controller's certificate, and
// optionally this client's certificate and key (both or neither).
struct ClientTlsFiles {
  std::string ca;
  std::string cert;
  std::string key;
  bool enabled() const { return !ca.empty() || !cert.empty() || !key.empty(); }
};
// TLS channel credentials; with a non-empty `token`, every call also carries
// "authorization: Bearer <token>" (gRPC sends it only over TLS).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsFiles& files, const std::string& token = "");

// Channel arguments every dcufleet client uses: the request size limit and
// the response size limit given.
grpc::ChannelArguments DefaultChannelArguments(int max_receive_bytes = kMaxRequestBytes);

}  // namespace dcu::common
