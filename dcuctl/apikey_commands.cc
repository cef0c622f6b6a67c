#include "dcuctl/apikey_commands.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::dcuctl {
namespace {

std::string ScopeOf(const dcufleet::v1::ApiKey& k) {
  return k.all_models() ? "*" : absl::StrJoin(k.models(), ",");
}

}  // namespace

int RunApiKeyCreate(Client& client, const std::string& name, const std::vector<std::string>& models,
                    std::ostream& out, std::ostream& err) {
  dcufleet::v1::CreateApiKeyRequest req;
  req.set_name(name);
  for (const auto& m : models) req.add_models(m);
  dcufleet::v1::CreateApiKeyResponse resp;
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::CreateApiKey, req, &resp);
  if (!s.ok()) return client.Fail(s, absl::StrCat("creating API key '", name, "'"), err);
  if (IsStructured(client.options().output)) {
    PrintStructured(ProtoToJson(resp), client.options().output, out);
    return kExitOk;
  }
  out << "API key '" << name << "' created (scope: " << ScopeOf(resp.key()) << ")\n"
      << resp.secret() << "\n"
      << "This is the only time the key is shown: the controller keeps its SHA-256 only.\n"
      << "Clients send it as \"Authorization: Bearer KEY\"; gateways require a key from now on.\n";
  return kExitOk;
}

int RunApiKeyList(Client& client, std::ostream& out, std::ostream& err) {
  dcufleet::v1::ListApiKeysRequest req;
  dcufleet::v1::ListApiKeysResponse resp;
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::ListApiKeys, req, &resp);
  if (!s.ok()) return client.Fail(s, "listing API keys", err);
  if (IsStructured(client.options().output)) {
    PrintStructured(ProtoToJson(resp), client.options().output, out);
    return kExitOk;
  }
  if (resp.keys().empty()) {
    out << "No API keys: gateways admit every request (dcuctl apikey create NAME adds one).\n";
    return kExitOk;
  }
  Table t({"NAME", "SCOPE", "AGE"});
  for (const auto& k : resp.keys()) t.AddRow({k.name(), ScopeOf(k), Age(k.created_at_ms())});
  t.Print(out, !client.options().no_headers);
  return kExitOk;
}

int RunApiKeyRevoke(Client& client, const std::string& name, std::ostream& out, std::ostream& err) {
  dcufleet::v1::RevokeApiKeyRequest req;
  req.set_name(name);
  dcufleet::v1::RevokeApiKeyResponse resp;
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::RevokeApiKey, req, &resp);
  if (!s.ok()) return client.Fail(s, absl::StrCat("revoking API key '", name, "'"), err);
  out << "API key '" << name << "' revoked (gateways refuse it within a second)\n";
  return kExitOk;
}

}  // namespace dcu::dcuctl
