#include "controller/service/auth.h"

#include <sys/stat.h>

#include <cerrno>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/fs_util.h"
#include "common/hash.h"
#include "common/ids.h"
#include "common/input_rules.h"
#include "common/status_util.h"
#include "common/tls_config.h"

namespace dcu::controller {
namespace {

constexpr char kRoleProperty[] = "dcufleet_role";
constexpr char kNameProperty[] = "dcufleet_name";
constexpr char kViaProperty[] = "dcufleet_via";

constexpr absl::string_view kFleetPrefix = "/dcufleet.v1.FleetService/";
constexpr absl::string_view kNodePrefix = "/dcufleet.v1.NodeService/";
// Read-only (ListPools), for the roles that may read the fleet.
constexpr absl::string_view kPoolPrefix = "/dcufleet.v1.PoolService/";

std::string View(const grpc::string_ref& s) { return std::string(s.data(), s.size()); }

bool IsLowerHex64(absl::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Splits an RFC 2253 subject ("O=node,CN=gpu-01") on unescaped commas and
// returns the value of `key` (the first one), unescaped.
std::string SubjectField(absl::string_view subject, absl::string_view key) {
  std::vector<std::string> parts;
  std::string cur;
  for (size_t i = 0; i < subject.size(); ++i) {
    char c = subject[i];
    if (c == '\\' && i + 1 < subject.size()) {
      cur.push_back(subject[++i]);
    } else if (c == ',' || c == '+') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  parts.push_back(cur);
  for (const std::string& p : parts) {
    absl::string_view v = absl::StripAsciiWhitespace(p);
    if (absl::ConsumePrefix(&v, key) && absl::ConsumePrefix(&v, "=")) return std::string(v);
  }
  return "";
}

}  // namespace

std::string RoleName(Role role) {
  switch (role) {
    case Role::kAdmin:
      return "admin";
    case Role::kReadOnly:
      return "read-only";
    case Role::kNode:
      return "node";
  }
  return "unknown";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  if (name == "admin") return Role::kAdmin;
  if (name == "read-only") return Role::kReadOnly;
  if (name == "node") return Role::kNode;
  return absl::InvalidArgumentError(absl::StrCat("role '", common::Preview(name),
                                                 "' is not one of admin, read-only, node"));
}

std::string Identity::Describe() const {
  if (insecure()) return "unauthenticated caller (no TLS)";
  return absl::StrCat(RoleName(role), " '", name, "' (", via, ")");
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view text, absl::string_view origin) {
  TokenTable table;
  std::set<std::string> names;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto where = [&] { return absl::StrCat(origin, ":", line_no); };
    if (f.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": expected 'sha256hex role name', got ", f.size(), " fields"));
    }
    if (!IsLowerHex64(f[0])) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), ": the first field must be 64 lower-case hex digits (the token's SHA-256, as "
                   "'dcuctl pki token' prints it), not the token itself"));
    }
    auto role = ParseRole(f[1]);
    if (!role.ok() || *role == Role::kNode) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), ": role '", common::Preview(f[1]),
          "' must be admin or read-only (nodes authenticate with certificates)"));
    }
    std::string why = common::ValidateName("name", f[2]);
    if (!why.empty()) return absl::InvalidArgumentError(absl::StrCat(where(), ": ", why));
    std::string hash(f[0]);
    if (table.by_hash_.count(hash)) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": this token hash is listed twice"));
    }
    if (!names.insert(std::string(f[2])).second) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": name '", f[2], "' is listed twice"));
    }
    table.by_hash_[hash] = TokenEntry{*role, std::string(f[2])};
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::LoadFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return common::ErrnoToStatus(errno, "--tokens-file", path);
  if ((st.st_mode & 022) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--tokens-file '", path, "' is writable by group or others; anyone who can write it can "
        "make themselves admin: run 'chmod 600 ", path, "'"));
  }
  auto text = common::ReadSmallFile(path, 16 << 20);
  if (!text.ok()) return common::Annotate(text.status(), "--tokens-file");
  return Parse(*text, path);
}

const TokenEntry* TokenTable::Find(absl::string_view token) const {
  auto it = by_hash_.find(common::Sha256Hex(token));
  return it == by_hash_.end() ? nullptr : &it->second;
}

absl::StatusOr<Identity> IdentityFromCertificate(absl::string_view subject, absl::string_view cn) {
  std::string why = common::ValidateName("certificate CN", cn);
  if (!why.empty()) return absl::UnauthenticatedError(why);
  std::string org = SubjectField(subject, "O");
  auto role = ParseRole(org);
  if (!role.ok()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "certificate '", cn, "' carries no dcufleet role (its O= must be node, admin or "
        "read-only; issue it with 'dcuctl pki issue')"));
  }
  return Identity{*role, std::string(cn), "certificate"};
}

bool IsPublicMethod(absl::string_view method_path) {
  return absl::StartsWith(method_path, "/grpc.health.v1.Health/");
}

absl::Status AuthorizeMethod(const Identity& who, absl::string_view path) {
  if (who.insecure() || IsPublicMethod(path)) return absl::OkStatus();
  absl::string_view method = path;
  if (absl::ConsumePrefix(&method, kNodePrefix)) {
    if (who.role == Role::kNode) return absl::OkStatus();
    return absl::PermissionDeniedError(
        absl::StrCat(who.Describe(), " may not call ", path, ": only node certificates may"));
  }
  if (absl::ConsumePrefix(&method, kFleetPrefix)) {
    if (who.role == Role::kAdmin) return absl::OkStatus();
    bool reads = absl::StartsWith(method, "Get") || absl::StartsWith(method, "List") ||
                 absl::StartsWith(method, "Watch");
    if (who.role == Role::kReadOnly && reads) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat(
        who.Describe(), " may not call ", method, ": ",
        who.role == Role::kNode ? "node certificates may only call NodeService"
                                : "it changes the fleet and needs the admin role"));
  }
  if (absl::ConsumePrefix(&method, kPoolPrefix)) {
    if ((who.role == Role::kAdmin || who.role == Role::kReadOnly) && absl::StartsWith(method, "List")) {
      return absl::OkStatus();
    }
    return absl::PermissionDeniedError(absl::StrCat(who.Describe(), " may not call ", path));
  }
  if (absl::StartsWith(path, "/grpc.reflection.")) {
    if (who.role == Role::kAdmin || who.role == Role::kReadOnly) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(who.Describe(), " may not call ", path));
}

absl::StatusOr<Identity> AuthProcessor::Decide(absl::string_view path, absl::string_view authorization,
                                               absl::string_view subject, absl::string_view cn) const {
  std::optional<Identity> who;
  if (!authorization.empty()) {
    absl::string_view token = authorization;
    if (!absl::ConsumePrefix(&token, "Bearer ") || token.empty()) {
      return absl::UnauthenticatedError("the authorization header is not 'Bearer <token>'");
    }
    const TokenEntry* entry = tokens_ ? tokens_->Find(token) : nullptr;
    // Never echo the token, not even a prefix.
    if (!entry) return absl::UnauthenticatedError("the bearer token is not in the controller's tokens file");
    who = Identity{entry->role, entry->name, "token"};
  } else if (!cn.empty()) {
    DCU_ASSIGN_OR_RETURN(who, IdentityFromCertificate(subject, cn));
  }
  if (!who) {
    if (IsPublicMethod(path)) return Identity{Role::kReadOnly, "anonymous", "none"};
    return absl::UnauthenticatedError(
        "no client certificate and no bearer token: pass --tls-cert/--tls-key or --token-file");
  }
  DCU_RETURN_IF_ERROR(AuthorizeMethod(*who, path));
  return *who;
}

grpc::Status AuthProcessor::Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                                    OutputMetadata* consumed_auth_metadata,
                                    OutputMetadata* /*response_metadata*/) {
  std::string path, authorization;
  int authorization_count = 0;
  for (const auto& [k, v] : auth_metadata) {
    absl::string_view key(k.data(), k.size());
    if (key == ":path") path = View(v);
    if (key == "authorization") {
      authorization = View(v);
      ++authorization_count;
    }
  }
  if (authorization_count > 1) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "more than one authorization header");
  }
  std::string subject, cn;
  for (const auto& v : context->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) subject = View(v);
  for (const auto& v : context->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)) cn = View(v);
  auto who = Decide(path, authorization, subject, cn);
  if (!who.ok()) {
    grpc::StatusCode code = who.status().code() == absl::StatusCode::kPermissionDenied
                                ? grpc::StatusCode::PERMISSION_DENIED
                                : grpc::StatusCode::UNAUTHENTICATED;
    return grpc::Status(code, std::string(who.status().message()));
  }
  // Handlers never see the token: it cannot end up in a log line.
  if (!authorization.empty()) consumed_auth_metadata->insert({"authorization", authorization});
  context->AddProperty(kRoleProperty, RoleName(who->role));
  context->AddProperty(kNameProperty, who->name);
  context->AddProperty(kViaProperty, who->via);
  context->SetPeerIdentityPropertyName(kNameProperty);
  return grpc::Status::OK;
}

absl::StatusOr<Identity> CallerIdentity(const grpc::ServerContextBase& ctx) {
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  std::string role, name, via;
  bool tls = false;
  if (auth) {
    for (const auto& v : auth->FindPropertyValues(kRoleProperty)) role = View(v);
    for (const auto& v : auth->FindPropertyValues(kNameProperty)) name = View(v);
    for (const auto& v : auth->FindPropertyValues(kViaProperty)) via = View(v);
    for (const auto& v : auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
      tls = tls || View(v) == "ssl";
    }
  }
  if (role.empty()) {
    if (tls) return absl::UnauthenticatedError("the call carries no dcufleet identity");
    return Identity{Role::kAdmin, "", "insecure"};
  }
  DCU_ASSIGN_OR_RETURN(Role r, ParseRole(role));
  return Identity{r, name, via};
}

absl::Status CheckNodeName(const Identity& who, absl::string_view field, absl::string_view node_name) {
  if (who.insecure()) return absl::OkStatus();
  if (who.role != Role::kNode) {
    return absl::PermissionDeniedError(absl::StrCat(who.Describe(), " is not a node"));
  }
  if (who.name != node_name) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the certificate of node '", who.name, "' may not speak for node '",
        common::Preview(node_name, 63), "' (", field, ")"));
  }
  return absl::OkStatus();
}

}  // namespace dcu::controller
