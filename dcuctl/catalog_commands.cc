#include "dcuctl/catalog_commands.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/units.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "dcuctl/stack_commands.h"

namespace dcu::dcuctl {
namespace {

using FleetStub = dcufleet::v1::FleetService::Stub;

void PrintImportSummary(const dcufleet::v1::ImportCatalogResponse& resp, bool dry_run,
                        std::ostream& out) {
  out << (dry_run ? "would import: " : "imported: ") << resp.stacks_added_size()
      << " stacks added, " << resp.stacks_updated_size() << " updated, "
      << resp.stacks_unchanged_size() << " unchanged; " << resp.evidence_added()
      << " evidence rows added, " << resp.evidence_unchanged() << " unchanged; "
      << resp.models_upserted_size() << " models\n";
  for (const auto& id : resp.stacks_added()) out << "  + " << id << "\n";
  for (const auto& id : resp.stacks_updated()) out << "  ~ " << id << "\n";
}

void PrintModelsTable(const dcufleet::v1::ListModelsResponse& resp, std::ostream& out) {
  std::map<std::string, std::vector<std::string>> where;
  for (const auto& d : resp.directories()) {
    if (d.model().empty()) continue;
    bool bad = false;
    for (const auto& f : d.audit().findings()) bad |= f.severity() == dcufleet::v1::FINDING_ERROR;
    // Present, verified or damaged per node (issue 19): a damaged copy is
    // never launched from nor copied from.
    const auto verdict = d.directory().weights().verdict();
    const char* weights = verdict == dcufleet::v1::WEIGHTS_DAMAGED        ? "(damaged)"
                          : verdict == dcufleet::v1::WEIGHTS_NOT_VERIFIED ? "(unverified)"
                                                                          : "";
    where[d.model()].push_back(absl::StrCat(d.node(), bad ? "(config!)" : "", weights));
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
}

// The findings of each failed attempt, oldest first.
nlohmann::json FailedAttempts(const dcufleet::v1::GetDeploymentResponse& resp) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& a : resp.deployment().status().attempts()) {
    if (a.findings().empty()) continue;
    nlohmann::json fa = {{"attempt", a.number()}, {"instance", a.instance_id()},
                         {"stack", a.stack_id()}, {"node", a.placement().node()},
                         {"findings", nlohmann::json::array()}};
    for (const auto& f : a.findings()) {
      nlohmann::json ev = nlohmann::json::array();
      for (const auto& e : f.evidence()) ev.push_back(e);
      if (f.expected_next()) {
        fa["findings"].push_back({{"class", f.failure_class()},
                                  {"confidence", f.confidence()},
                                  {"expected_next", true},
                                  {"explanation", f.explanation()},
                                  {"conditions", std::vector<std::string>(f.conditions().begin(),
                                                                          f.conditions().end())}});
        continue;
      }
      fa["findings"].push_back({{"class", f.failure_class()},
                                {"confidence", f.confidence()},
                                {"evidence", ev},
                                {"remediation",
                                 {{"kind", modelkit::RemediationKindName(f.remediation_kind())},
                                  {"action", modelkit::DiagnosisActionName(f.remediation_action())}}}});
    }
    j.push_back(fa);
  }
  return j;
}

void PrintFailedAttempts(const std::string& name, const nlohmann::json& j, std::ostream& out) {
  if (j.empty()) {
    out << "deployment '" << name << "' has no failed attempts\n";
    return;
  }
  for (const auto& a : j) {
    out << "Attempt " << a["attempt"].get<int>() << " (" << a["stack"].get<std::string>() << " on "
        << a["node"].get<std::string>() << "):\n";
    for (const auto& f : a["findings"]) {
      if (f.value("expected_next", false)) {
        out << "  " << f["class"].get<std::string>() << "  "
            << static_cast<int>(f["confidence"].get<double>() * 100) << "%  expected next: "
            << ShortenKeepingEnd(f["explanation"].get<std::string>(), 240) << "\n";
        continue;
      }
      out << "  " << f["class"].get<std::string>() << "  "
          << static_cast<int>(f["confidence"].get<double>() * 100) << "%  → "
          << RemediationWords(f["remediation"]["kind"].get<std::string>(),
                              f["remediation"]["action"].get<std::string>())
          << "\n";
      for (const auto& e : f["evidence"]) {
        out << "    | " << ShortenKeepingEnd(e.get<std::string>(), 160) << "\n";
      }
    }
  }
}

// Drops the header line of a rendered table (--no-headers).
std::string WithoutHeader(const std::string& table) {
  size_t nl = table.find('\n');
  return nl == std::string::npos ? "" : table.substr(nl + 1);
}

}  // namespace

int RunGetStacks(Client& client, const std::string& arch, std::ostream& out, std::ostream& err) {
  dcufleet::v1::ListStacksRequest req;
  req.set_arch(arch);
  QueryView<dcufleet::v1::ListStacksResponse> view;
  view.render = [&](const dcufleet::v1::ListStacksResponse& resp, const std::string& fmt) {
    if (resp.stacks().empty()) {
      err << "No stacks" << (arch.empty() ? "" : absl::StrCat(" for ", arch))
          << ". Import some with: dcuctl stack import FILE.txtpb\n";
      return kExitOk;
    }
    std::ostringstream table;
    RenderStacksTable(resp, arch, fmt == "wide", table);
    out << (client.options().no_headers ? WithoutHeader(table.str()) : table.str());
    return kExitOk;
  };
  view.structured = [](const dcufleet::v1::ListStacksResponse& resp) {
    return ProtoToJsonListing(resp, {"stacks"});
  };
  view.items = "stacks";
  view.names = [](const dcufleet::v1::ListStacksResponse& resp) {
    std::vector<std::string> names;
    for (const auto& s : resp.stacks()) names.push_back(absl::StrCat("stack/", s.stack().id()));
    return names;
  };
  return RunQuery(client, &FleetStub::ListStacks, req, "listing stacks", view, out, err);
}

int RunDescribeStack(Client& client, const std::string& id, std::ostream& out, std::ostream& err) {
  dcufleet::v1::GetStackRequest req;
  req.set_id(id);
  QueryView<dcufleet::v1::GetStackResponse> view;
  view.render = [&](const dcufleet::v1::GetStackResponse& resp, const std::string&) {
    RenderStackDescription(resp, out);
    return kExitOk;
  };
  return RunQuery(client, &FleetStub::GetStack, req, absl::StrCat("describing stack '", id, "'"),
                  view, out, err);
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
  grpc::Status s = CallFleet(client, &FleetStub::ImportCatalog, req, &resp);
  if (!s.ok()) {
    // Every problem in the files, not Fail's one line.
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      err << "error: nothing imported; fix these and retry:\n" << s.error_message() << "\n";
      return kExitUsage;
    }
    return client.Fail(s, "importing the catalog", err);
  }
  QueryView<dcufleet::v1::ImportCatalogResponse> view;
  view.render = [&](const dcufleet::v1::ImportCatalogResponse& resp, const std::string&) {
    PrintImportSummary(resp, dry_run, out);
    return kExitOk;
  };
  return ShowResponse(client, resp, view, out);
}

int RunGetModels(Client& client, std::ostream& out, std::ostream& err) {
  dcufleet::v1::ListModelsRequest req;
  QueryView<dcufleet::v1::ListModelsResponse> view;
  view.render = [&](const dcufleet::v1::ListModelsResponse& resp, const std::string&) {
    std::ostringstream table;
    PrintModelsTable(resp, table);
    out << (client.options().no_headers ? WithoutHeader(table.str()) : table.str());
    return kExitOk;
  };
  view.structured = [](const dcufleet::v1::ListModelsResponse& resp) {
    return ProtoToJsonListing(resp, {"models", "directories"});
  };
  view.items = "models";
  view.names = [](const dcufleet::v1::ListModelsResponse& resp) {
    std::vector<std::string> names;
    for (const auto& m : resp.models()) names.push_back(absl::StrCat("model/", m.name()));
    return names;
  };
  return RunQuery(client, &FleetStub::ListModels, req, "listing models", view, out, err);
}

int RunDiagnoseDeployment(Client& client, const std::string& name, std::ostream& out,
                          std::ostream& err) {
  dcufleet::v1::GetDeploymentRequest req;
  req.set_name(name);
  QueryView<dcufleet::v1::GetDeploymentResponse> view;
  view.structured = [](const dcufleet::v1::GetDeploymentResponse& resp) {
    return nlohmann::json{{"attempts", FailedAttempts(resp)}};
  };
  view.render = [&](const dcufleet::v1::GetDeploymentResponse& resp, const std::string&) {
    PrintFailedAttempts(name, FailedAttempts(resp), out);
    return kExitOk;
  };
  return RunQuery(client, &FleetStub::GetDeployment, req,
                  absl::StrCat("reading deployment '", name, "'"), view, out, err);
}

}  // namespace dcu::dcuctl
