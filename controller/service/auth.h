#pragma once

// Who is calling the controller, and what they may do.
//
// Identities come from two places, checked by AuthProcessor for every call
// on a TLS port before any handler runs:
//   - a client certificate signed by --tls-client-ca: CN is the name, O is
//     the role ("node", "admin" or "read-only"; `dcuctl pki issue` writes
//     them);
//   - a bearer token ("authorization: Bearer <token>" metadata): its SHA-256
//     is looked up in --tokens-file (lines "sha256hex role name"). When a
//     call carries both, the token names the caller.
// The processor then authorizes the method (one policy, default deny, so an
// RPC added later is admin-only until listed otherwise):
//   /grpc.health.v1.Health/*              anyone, even unauthenticated
//   /dcufleet.v1.NodeService/*            role node only
//   /dcufleet.v1.FleetService/Get*|List*|Watch*   admin, read-only
//   /dcufleet.v1.FleetService/*           admin
//   /grpc.reflection.*                    admin, read-only
//   anything else                         nobody
// and leaves the identity in the call's AuthContext (properties
// "dcufleet_role", "dcufleet_name", "dcufleet_via") for handlers:
// NodeService binds a stream to the node its certificate names.
//
// Without TLS (loopback, or --insecure) no processor runs and CallerIdentity
// reports the caller as an unauthenticated admin ("insecure"), as before.

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::controller {

enum class Role { kAdmin, kReadOnly, kNode };

// "admin", "read-only", "node".
std::string RoleName(Role role);
// Parses a role name; INVALID_ARGUMENT otherwise.
absl::StatusOr<Role> ParseRole(absl::string_view name);

struct Identity {
  Role role = Role::kAdmin;
  std::string name;
  // "certificate", "token", or "insecure" (no TLS: no identity at all).
  std::string via;
  bool insecure() const { return via == "insecure"; }
  // "admin 'alice' (token)".
  std::string Describe() const;
};

struct TokenEntry {
  Role role = Role::kReadOnly;
  std::string name;
};

// The tokens file: one "sha256hex role name" per line, '#' comments and
// blank lines allowed. Only hashes are stored, so the file is not a secret,
// but it decides who is admin: it must not be writable by group or others.
class TokenTable {
 public:
  // INVALID_ARGUMENT naming origin:line for a bad line, a role other than
  // admin / read-only, or a repeated hash or name.
  static absl::StatusOr<TokenTable> Parse(absl::string_view text, absl::string_view origin);
  static absl::StatusOr<TokenTable> LoadFile(const std::string& path);

  // The entry whose hash equals SHA-256(token), or nullptr.
  const TokenEntry* Find(absl::string_view token) const;
  size_t size() const { return by_hash_.size(); }

 private:
  std::map<std::string, TokenEntry> by_hash_;
};

// Identity from a verified client certificate's subject, as gRPC reports it
// ("x509_subject", RFC 2253: "O=node,CN=gpu-01") and its CN. UNAUTHENTICATED
// when the CN is not a valid name or O is not a role.
absl::StatusOr<Identity> IdentityFromCertificate(absl::string_view subject, absl::string_view cn);

// The method policy above; PERMISSION_DENIED saying who may call it.
absl::Status AuthorizeMethod(const Identity& who, absl::string_view method_path);

// True for methods that need no identity at all (health checks).
bool IsPublicMethod(absl::string_view method_path);

// Authenticates and authorizes every call on a TLS port (see above).
class AuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit AuthProcessor(std::shared_ptr<const TokenTable> tokens) : tokens_(std::move(tokens)) {}

  // Fast and non-blocking: a hash and a map lookup.
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

  // The decision alone, for tests: `metadata` holds ":path" and optionally
  // "authorization"; `subject`/`cn` are empty without a client certificate.
  absl::StatusOr<Identity> Decide(absl::string_view path, absl::string_view authorization,
                                  absl::string_view subject, absl::string_view cn) const;

 private:
  std::shared_ptr<const TokenTable> tokens_;
};

// The caller of the current call: what AuthProcessor recorded, or the
// insecure identity on a plaintext port. UNAUTHENTICATED when a TLS call has
// no identity (cannot happen with the processor installed).
absl::StatusOr<Identity> CallerIdentity(const grpc::ServerContextBase& ctx);

// A node stream may speak only for the node its certificate names.
// PERMISSION_DENIED otherwise; always OK for the insecure identity.
absl::Status CheckNodeName(const Identity& who, absl::string_view field, absl::string_view node_name);

}  // namespace dcu::controller
