#include "controller/service/http_api.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "controller/ui/ui_assets.h"

namespace dcu::controller {

using common::ServedRequest;
using common::ServedResponse;

namespace {

int HttpStatusOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition: return 409;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

ServedResponse ErrorJson(int status, absl::string_view message) {
  std::string body;
  google::protobuf::Value v;  // a JSON string escaped by the same library
  v.set_string_value(std::string(message));
  (void)google::protobuf::util::MessageToJsonString(v, &body);
  return ServedResponse::Json(status, absl::StrCat("{\"error\":", body, "}\n"));
}

template <typename Message>
ServedResponse AsJson(const absl::StatusOr<Message>& r) {
  if (!r.ok()) return ErrorJson(HttpStatusOf(r.status()), r.status().message());
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  // Zero-valued fields too (unreclaimed_bytes 0 is a fact, not a gap), and
  // the proto's own field names, as `dcuctl -o json` prints them.
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  auto s = google::protobuf::util::MessageToJsonString(*r, &out, o);
  if (!s.ok()) return ErrorJson(500, "cannot encode the answer as JSON");
  return ServedResponse::Json(200, std::move(out));
}

// nullopt: allowed; otherwise the 401 to send.
std::optional<ServedResponse> CheckAuth(const TokenTable* tokens, const ServedRequest& req) {
  if (!tokens) return std::nullopt;
  ServedResponse deny = ErrorJson(401, "this controller needs a bearer token (admin or read-only): "
                                     "send \"Authorization: Bearer TOKEN\"");
  deny.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"dcufleet\"");
  constexpr absl::string_view kBearer = "Bearer ";
  if (!absl::StartsWithIgnoreCase(req.authorization, kBearer)) return deny;
  const TokenEntry* e = tokens->Find(absl::string_view(req.authorization).substr(kBearer.size()));
  if (!e) {
    ServedResponse bad = ErrorJson(401, "the bearer token is not valid");
    bad.headers = deny.headers;
    return bad;
  }
  // Both roles a token can have may read (auth.h: Get*/List*/Watch*).
  if (e->role != Role::kAdmin && e->role != Role::kReadOnly) {
    return ErrorJson(403, "this token's role may not read the fleet");
  }
  return std::nullopt;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> PercentDecode(absl::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%') {
      int hi = i + 1 < in.size() ? HexDigit(in[i + 1]) : -1;
      int lo = i + 2 < in.size() ? HexDigit(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) return absl::InvalidArgumentError("bad percent escape in the query");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

const UiAsset* FindAsset(absl::string_view rel) {
  for (const auto& a : UiAssets()) {
    if (rel == a.path) return &a;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::optional<std::string>> QueryParam(const std::string& query,
                                                      const std::string& key) {
  for (absl::string_view part : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    size_t eq = part.find('=');
    absl::string_view k = part.substr(0, eq);
    if (k != key) continue;
    auto v = PercentDecode(eq == absl::string_view::npos ? "" : part.substr(eq + 1));
    if (!v.ok()) return v.status();
    return std::optional<std::string>(*std::move(v));
  }
  return std::optional<std::string>();
}

void InstallHttpApi(common::HttpServer* server, HttpApiDeps deps) {
  auto shared = std::make_shared<HttpApiDeps>(std::move(deps));
  auto guarded = [shared](std::function<ServedResponse(const ServedRequest&)> fn) {
    return [shared, fn = std::move(fn)](const ServedRequest& req) {
      if (auto deny = CheckAuth(shared->tokens.get(), req)) return *deny;
      return fn(req);
    };
  };
  server->Handle("/healthz", [](const ServedRequest&) { return ServedResponse::Text(200, "ok"); });
  if (shared->metrics) {
    server->Handle("/metrics", guarded([shared](const ServedRequest&) {
                     return shared->metrics->Scrape(*shared->reads.fleet, shared->reads.deployments);
                   }));
  }
  server->Handle("/api/v1/nodes", guarded([shared](const ServedRequest&) {
                   return AsJson(ReadNodes(shared->reads));
                 }));
  server->Handle("/api/v1/deployments", guarded([shared](const ServedRequest&) {
                   return AsJson(ReadDeployments(shared->reads));
                 }));
  server->Handle("/api/v1/deployments/", guarded([shared](const ServedRequest& req) {
                   std::string name = req.path.substr(std::string("/api/v1/deployments/").size());
                   auto decoded = PercentDecode(name);
                   if (!decoded.ok()) return ErrorJson(400, decoded.status().message());
                   // ReadDeployment validates the name (a '/' or '..' is refused there).
                   return AsJson(ReadDeployment(shared->reads, *decoded));
                 }));
  server->Handle("/api/v1/stacks", guarded([shared](const ServedRequest& req) {
                   dcufleet::v1::ListStacksRequest r;
                   auto arch = QueryParam(req.query, "arch");
                   if (!arch.ok()) return ErrorJson(400, arch.status().message());
                   if (*arch) r.set_arch(**arch);
                   return AsJson(ReadStacks(shared->reads, r));
                 }));
  server->Handle("/api/v1/events", guarded([shared](const ServedRequest& req) {
                   dcufleet::v1::ListEventsRequest r;
                   for (const char* key : {"kind", "name", "limit", "after_id"}) {
                     auto v = QueryParam(req.query, key);
                     if (!v.ok()) return ErrorJson(400, v.status().message());
                     if (!*v) continue;
                     if (std::string(key) == "kind") r.set_kind(**v);
                     if (std::string(key) == "name") r.set_name(**v);
                     if (std::string(key) == "limit") {
                       int limit = 0;
                       if (!absl::SimpleAtoi(**v, &limit)) {
                         return ErrorJson(400, "limit is not a number");
                       }
                       r.set_limit(limit);
                     }
                     if (std::string(key) == "after_id") {
                       int64_t after_id = 0;
                       if (!absl::SimpleAtoi(**v, &after_id)) {
                         return ErrorJson(400, "after_id is not a number");
                       }
                       r.set_after_id(after_id);
                     }
                   }
                   return AsJson(ReadEvents(shared->reads, r));
                 }));
  server->Handle("/api/", guarded([](const ServedRequest& req) {
                   return ErrorJson(404, absl::StrCat("no API route ", req.path));
                 }));
  server->Handle("/", [](const ServedRequest& req) {
    if (req.path != "/") return ServedResponse::Text(404, absl::StrCat("no route ", req.path));
    ServedResponse r = ServedResponse::Text(302, "the dashboard is at /ui/");
    r.headers.emplace_back("Location", "/ui/");
    return r;
  });
  server->Handle("/ui/", [](const ServedRequest& req) {
    std::string rel = req.path.size() > 4 ? req.path.substr(4) : "";
    if (rel.empty()) rel = "index.html";
    const UiAsset* a = FindAsset(rel);
    if (!a) return ServedResponse::Text(404, absl::StrCat("no dashboard file ", req.path));
    ServedResponse r;
    r.content_type = a->content_type;
    r.body = a->data;
    // Scripts and styles from this origin only: the page needs nothing else.
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
    return r;
  });
}

}  // namespace dcu::controller
