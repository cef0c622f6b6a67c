#include "dcuctl/catalog_commands.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/units.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcuctl/stack_commands.h"

namespace dcu::dcuctl {

int RunGetStacks(Client& client, const std::string& arch, std::ostream& out, std::ostream& err) {
  dcufleet::v1::ListStacksRequest req;
  req.set_arch(arch);
  dcufleet::v1::ListStacksResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ListStacks(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail(s, "listing stacks", err);
  const std::string& fmt = client.options().output;
  if (fmt == "json" || fmt == "yaml") {
    PrintStructured(ProtoToJson(resp), fmt, out);
    return kExitOk;
  }
  if (resp.stacks().empty()) {
    err << "No stacks" << (arch.empty() ? "" : absl::StrCat(" for ", arch))
        << ". Import some with: dcuctl stack import FILE.txtpb\n";
    return kExitOk;
  }
  RenderStacksTable(resp, arch, fmt == "wide", out);
  return kExitOk;
}

int RunDescribeStack(Client& client, const std::string& id, std::ostream& out, std::ostream& err) {
  dcufleet::v1::GetStackRequest req;
  req.set_id(id);
  dcufleet::v1::GetStackResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetStack(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail(s, absl::StrCat("describing stack '", id, "'"), err);
  const std::string& fmt = client.options().output;
  if (fmt == "json" || fmt == "yaml") {
    PrintStructured(ProtoToJson(resp), fmt, out);
    return kExitOk;
  }
  RenderStackDescription(resp, out);
  return kExitOk;
}

int RunStackImport(Client& client, const std::vector<std::string>& files, bool dry_run,
                   std::ostream& out, std::ostream& err) {
  dcufleet::v1::ImportCatalogRequest req;
  req.set_dry_run(dry_run);
  for (const auto& path : files) {
    std::ifstream in(path);
    if (!in) {
      err << "error: cannot read '" << path << "'\n";
      return kExitUsage;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    auto* f = req.add_files();
    f->set_name(path);
    f->set_text(ss.str());
  }
  dcufleet::v1::ImportCatalogResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ImportCatalog(ctx.get(), req, &resp);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      err << "error: nothing imported; fix these and retry:\n" << s.error_message() << "\n";
      return kExitUsage;
    }
    return client.Fail(s, "importing the catalog", err);
  }
  const std::string& fmt = client.options().output;
  if (fmt == "json" || fmt == "yaml") {
    PrintStructured(ProtoToJson(resp), fmt, out);
    return kExitOk;
  }
  out << (dry_run ? "would import: " : "imported: ") << resp.stacks_added_size()
      << " stacks added, " << resp.stacks_updated_size() << " updated, "
      << resp.stacks_unchanged_size() << " unchanged; " << resp.evidence_added()
      << " evidence rows added, " << resp.evidence_unchanged() << " unchanged; "
      << resp.models_upserted_size() << " models\n";
  for (const auto& id : resp.stacks_added()) out << "  + " << id << "\n";
  for (const auto& id : resp.stacks_updated()) out << "  ~ " << id << "\n";
  return kExitOk;
}

int RunGetModels(Client& client, std::ostream& out, std::ostream& err) {
  dcufleet::v1::ListModelsRequest req;
  dcufleet::v1::ListModelsResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().ListModels(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail(s, "listing models", err);
  const std::string& fmt = client.options().output;
  if (fmt == "json" || fmt == "yaml") {
    PrintStructured(ProtoToJson(resp), fmt, out);
    return kExitOk;
  }
  std::map<std::string, std::vector<std::string>> where;
  for (const auto& d : resp.directories()) {
    if (d.model().empty()) continue;
    bool bad = false;
    for (const auto& f : d.audit().findings()) bad |= f.severity() == dcufleet::v1::FINDING_ERROR;
    where[d.model()].push_back(absl::StrCat(d.node(), bad ? "(config!)" : ""));
  }
  Table t({"NAME", "HF REPO", "ARCH", "LAYERS", "HEADS/KV", "HEAD_DIM", "WEIGHTS", "ON NODES"});
  for (const auto& m : resp.models()) {
    const auto& fp = m.fingerprint();
    t.AddRow({m.name(), m.hf_repo(), fp.architectures().empty() ? "-" : fp.architectures(0),
              absl::StrCat(fp.num_hidden_layers()),
              absl::StrCat(fp.num_attention_heads(), "/", fp.num_key_value_heads()),
              absl::StrCat(fp.head_dim()), common::HumanBytes(m.weight_bytes()),
              where.count(m.name()) ? absl::StrJoin(where[m.name()], ",") : "-"});
  }
  t.Print(out);
  return kExitOk;
}

int RunDiagnoseDeployment(Client& client, const std::string& name, std::ostream& out,
                          std::ostream& err) {
  dcufleet::v1::GetDeploymentRequest req;
  req.set_name(name);
  dcufleet::v1::GetDeploymentResponse resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub().GetDeployment(ctx.get(), req, &resp);
  if (!s.ok()) return client.Fail(s, absl::StrCat("reading deployment '", name, "'"), err);
  const std::string& fmt = client.options().output;
  nlohmann::json j = nlohmann::json::array();
  int failed = 0;
  for (const auto& a : resp.deployment().status().attempts()) {
    if (a.findings().empty()) continue;
    ++failed;
    nlohmann::json fa = {{"attempt", a.number()}, {"instance", a.instance_id()},
                         {"stack", a.stack_id()}, {"node", a.placement().node()},
                         {"findings", nlohmann::json::array()}};
    for (const auto& f : a.findings()) {
      nlohmann::json ev = nlohmann::json::array();
      for (const auto& e : f.evidence()) ev.push_back(e);
      fa["findings"].push_back({{"class", f.failure_class()},
                                {"confidence", f.confidence()},
                                {"evidence", ev},
                                {"remediation",
                                 {{"kind", f.remediation_kind()}, {"action", f.remediation_action()}}}});
    }
    j.push_back(fa);
  }
  if (fmt == "json" || fmt == "yaml") {
    PrintStructured(nlohmann::json{{"attempts", j}}, fmt, out);
    return kExitOk;
  }
  if (failed == 0) {
    out << "deployment '" << name << "' has no failed attempts\n";
    return kExitOk;
  }
  for (const auto& a : j) {
    out << "Attempt " << a["attempt"].get<int>() << " (" << a["stack"].get<std::string>() << " on "
        << a["node"].get<std::string>() << "):\n";
    for (const auto& f : a["findings"]) {
      out << "  " << f["class"].get<std::string>() << "  "
          << static_cast<int>(f["confidence"].get<double>() * 100) << "%  → "
          << f["remediation"]["kind"].get<std::string>() << ": "
          << f["remediation"]["action"].get<std::string>() << "\n";
      for (const auto& e : f["evidence"]) out << "    | " << e.get<std::string>().substr(0, 160) << "\n";
    }
  }
  return kExitOk;
}

}  // namespace dcu::dcuctl
