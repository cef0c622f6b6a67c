#include "dcuctl/watch_commands.h"

#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "dcuctl/deploy_commands.h"
#include "dcuctl/events_commands.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/node_commands.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "dcuctl/stop_signal.h"

namespace dcu::dcuctl {
namespace {

using FleetStub = dcufleet::v1::FleetService::Stub;
constexpr absl::Duration kPollEvery = absl::Seconds(1);

// Prints each change in the -o format: a row under the first table, or the
// object itself (json, yaml, jsonpath) or its name.
class ChangePrinter {
 public:
  ChangePrinter(const Client& client, std::string kind, std::ostream& out, std::ostream& err)
      : format_(client.options().output),
        headers_(!client.options().no_headers),
        kind_(std::move(kind)),
        out_(out),
        err_(err) {}

  // The first listing: the whole table (table/wide), else each object.
  int First(const Table& table, const std::vector<nlohmann::json>& objects,
            const std::vector<std::string>& names) {
    if (format_ == "table" || format_ == "wide") {
      table.Print(out_, headers_);
      widths_ = table.Widths();
      out_.flush();
      return kExitOk;
    }
    for (size_t i = 0; i < objects.size(); ++i) {
      if (int rc = Change(std::vector<std::string>{}, objects[i], names[i]); rc != kExitOk) return rc;
    }
    return kExitOk;
  }

  int Change(const std::vector<std::string>& row, const nlohmann::json& object,
             const std::string& name) {
    if (format_ == "table" || format_ == "wide") {
      out_ << Table::FormatRow(row, widths_) << "\n";
    } else if (format_ == "name") {
      out_ << kind_ << "/" << name << "\n";
    } else {
      if (format_ == "yaml" && printed_) out_ << "---\n";
      if (int rc = PrintDocument(object, format_, out_, err_); rc != kExitOk) return rc;
      // jsonpath prints no newline of its own; one change per line.
      if (format_.rfind("jsonpath=", 0) == 0) out_ << "\n";
    }
    printed_ = true;
    out_.flush();
    return kExitOk;
  }

  bool wide() const { return format_ == "wide"; }
  bool tabular() const { return format_ == "table" || format_ == "wide"; }

 private:
  std::string format_;
  bool headers_;
  std::string kind_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<size_t> widths_;
  bool printed_ = false;
};

// A row without its clock column (a node's LAST SEEN moves on every
// heartbeat, a deployment's AGE every second).
std::string Signature(const std::vector<std::string>& row, size_t clock_column) {
  std::vector<std::string> r = row;
  if (r.size() > clock_column) r.erase(r.begin() + static_cast<long>(clock_column));
  return absl::StrJoin(r, "\x1f");
}
std::string NodeSignature(const std::vector<std::string>& row) { return Signature(row, 4); }

// What must change for a deployment's line: its row in a table (a revision
// that changes nothing shown prints nothing), its revision otherwise.
std::string DeploymentSignature(const ChangePrinter& printer, const dcufleet::v1::Deployment& d) {
  if (printer.tabular()) return Signature(DeploymentRow(d, printer.wide()), 8);
  return absl::StrCat(d.uid(), "/", d.revision());
}

}  // namespace

int RunWatchNodes(Client& client, const std::string& name, std::ostream& out, std::ostream& err) {
  ChangePrinter printer(client, "node", out, err);
  std::map<std::string, std::string> seen;  // name -> signature
  bool first = true;
  while (!StopRequested()) {
    dcufleet::v1::ListNodesResponse list;
    grpc::Status s;
    if (name.empty()) {
      s = CallFleet(client, &FleetStub::ListNodes, dcufleet::v1::ListNodesRequest(), &list);
    } else {
      dcufleet::v1::GetNodeRequest req;
      req.set_name(name);
      s = CallFleet(client, &FleetStub::GetNode, req, list.add_nodes());
    }
    if (!s.ok()) {
      if (StopRequested()) break;
      return client.Fail(s, name.empty() ? "watching nodes" : absl::StrCat("watching node '", name, "'"),
                         err);
    }
    if (first) {
      std::vector<nlohmann::json> objects;
      std::vector<std::string> names;
      for (const auto& n : list.nodes()) {
        seen[n.name()] = NodeSignature(NodeRow(n, printer.wide()));
        objects.push_back(ProtoToJson(n));
        names.push_back(n.name());
      }
      if (list.nodes().empty()) err << "No nodes registered yet; watching.\n";
      if (int rc = printer.First(NodesTable(list, printer.wide()), objects, names); rc != kExitOk) {
        return rc;
      }
      first = false;
    } else {
      for (const auto& n : list.nodes()) {
        std::vector<std::string> row = NodeRow(n, printer.wide());
        std::string sig = NodeSignature(row);
        auto it = seen.find(n.name());
        if (it != seen.end() && it->second == sig) continue;
        seen[n.name()] = sig;
        if (int rc = printer.Change(row, ProtoToJson(n), n.name()); rc != kExitOk) return rc;
      }
    }
    if (SleepUnlessStopped(kPollEvery)) break;
  }
  return kExitOk;
}

namespace {

// `get deployments -w`: ListDeployments once a second.
int PollDeployments(Client& client, ChangePrinter& printer, std::ostream& err) {
  std::map<std::string, dcufleet::v1::Deployment> seen;
  std::map<std::string, std::string> shown;  // name -> DeploymentSignature
  bool first = true;
  while (!StopRequested()) {
    dcufleet::v1::ListDeploymentsResponse list;
    grpc::Status s =
        CallFleet(client, &FleetStub::ListDeployments, dcufleet::v1::ListDeploymentsRequest(), &list);
    if (!s.ok()) {
      if (StopRequested()) break;
      return client.Fail(s, "watching deployments", err);
    }
    if (first) {
      std::vector<nlohmann::json> objects;
      std::vector<std::string> names;
      for (const auto& d : list.deployments()) {
        seen[d.spec().name()] = d;
        shown[d.spec().name()] = DeploymentSignature(printer, d);
        objects.push_back(ProtoToJson(d));
        names.push_back(d.spec().name());
      }
      if (list.deployments().empty()) err << "No deployments yet; watching.\n";
      if (int rc = printer.First(DeploymentsTable(list, printer.wide()), objects, names);
          rc != kExitOk) {
        return rc;
      }
      first = false;
    } else {
      std::map<std::string, bool> present;
      for (const auto& d : list.deployments()) {
        present[d.spec().name()] = true;
        seen[d.spec().name()] = d;
        std::string sig = DeploymentSignature(printer, d);
        auto it = shown.find(d.spec().name());
        if (it != shown.end() && it->second == sig) continue;
        shown[d.spec().name()] = sig;
        if (int rc = printer.Change(DeploymentRow(d, printer.wide()), ProtoToJson(d), d.spec().name());
            rc != kExitOk) {
          return rc;
        }
      }
      for (auto it = seen.begin(); it != seen.end();) {
        if (present.count(it->first)) {
          ++it;
          continue;
        }
        // Gone: its last row, PHASE "Deleted".
        std::vector<std::string> row = DeploymentRow(it->second, printer.wide());
        row[2] = "Deleted";
        nlohmann::json j = ProtoToJson(it->second);
        j["status"]["deleted"] = true;
        if (int rc = printer.Change(row, j, it->first); rc != kExitOk) return rc;
        shown.erase(it->first);
        it = seen.erase(it);
      }
    }
    if (SleepUnlessStopped(kPollEvery)) break;
  }
  return kExitOk;
}

// `get deployment NAME -w`: its WatchDeployment stream; reconnects (from the
// revision last seen) when the controller goes away and comes back.
int StreamDeployment(Client& client, const std::string& name, ChangePrinter& printer,
                     std::ostream& err) {
  int64_t revision = 0;
  std::optional<dcufleet::v1::Deployment> last;
  std::string shown;
  bool first = true;
  while (!StopRequested()) {
    grpc::ClientContext ctx;
    OnStop([&ctx] { ctx.TryCancel(); });
    dcufleet::v1::WatchDeploymentRequest req;
    req.set_name(name);
    req.set_after_revision(revision);
    auto reader = client.stub().WatchDeployment(&ctx, req);
    dcufleet::v1::GetDeploymentResponse update;
    int rc = kExitOk;
    while (rc == kExitOk && reader->Read(&update)) {
      const auto& d = update.deployment();
      revision = d.revision();
      last = d;
      std::string sig = DeploymentSignature(printer, d);
      if (!first && sig == shown) continue;
      shown = sig;
      if (first) {
        dcufleet::v1::ListDeploymentsResponse list;
        *list.add_deployments() = d;
        rc = printer.First(DeploymentsTable(list, printer.wide()), {ProtoToJson(d)}, {name});
        first = false;
      } else {
        rc = printer.Change(DeploymentRow(d, printer.wide()), ProtoToJson(d), name);
      }
    }
    if (rc != kExitOk) ctx.TryCancel();
    grpc::Status s = reader->Finish();
    OnStop(nullptr);
    if (rc != kExitOk) return rc;
    if (StopRequested()) break;
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      if (!last) return client.Fail(s, absl::StrCat("watching deployment '", name, "'"), err);
      std::vector<std::string> row = DeploymentRow(*last, printer.wide());
      row[2] = "Deleted";
      nlohmann::json j = ProtoToJson(*last);
      j["status"]["deleted"] = true;
      return printer.Change(row, j, name);
    }
    if (first) return client.Fail(s, absl::StrCat("watching deployment '", name, "'"), err);
    // The controller went away mid-watch: say so once, and try again.
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.ok()) {
      err << "watch interrupted (" << (s.ok() ? "the controller ended it" : s.error_message())
          << "); reconnecting\n";
      if (SleepUnlessStopped(kPollEvery)) break;
      continue;
    }
    return client.Fail(s, absl::StrCat("watching deployment '", name, "'"), err);
  }
  return kExitOk;
}

}  // namespace

int RunWatchDeployments(Client& client, const std::string& name, std::ostream& out,
                        std::ostream& err) {
  ChangePrinter printer(client, "deployment", out, err);
  return name.empty() ? PollDeployments(client, printer, err)
                      : StreamDeployment(client, name, printer, err);
}

int RunWatchEvents(Client& client, const std::string& for_object, std::ostream& out,
                   std::ostream& err) {
  std::optional<dcufleet::v1::ListEventsRequest> request = EventsRequestOrRefuse(for_object, err);
  if (!request) return kExitUsage;
  dcufleet::v1::ListEventsRequest req = *std::move(request);
  // The controller's most per call. After the first listing each poll asks
  // only for what is above the last event printed, a page at a time, so a
  // watcher costs the controller the new events and not the window.
  constexpr int kLimit = 5000;
  req.set_limit(kLimit);
  ChangePrinter printer(client, "event", out, err);
  int64_t last_id = -1;
  while (!StopRequested()) {
    if (last_id > 0) req.set_after_id(last_id);
    dcufleet::v1::ListEventsResponse resp;
    grpc::Status s = CallFleet(client, &FleetStub::ListEvents, req, &resp);
    if (!s.ok()) {
      if (StopRequested()) break;
      return client.Fail(s, "watching events", err);
    }
    const int64_t now = absl::ToUnixMillis(absl::Now());
    if (last_id < 0) {
      std::vector<nlohmann::json> objects;
      std::vector<std::string> names;
      for (const auto& e : resp.events()) {
        objects.push_back(ProtoToJson(e));
        names.push_back(absl::StrCat(e.id()));
      }
      if (resp.events().empty()) {
        err << "No events" << (for_object.empty() ? "" : absl::StrCat(" for ", for_object))
            << " yet; watching.\n";
      }
      if (int rc = printer.First(EventsTable(resp, now), objects, names); rc != kExitOk) return rc;
      last_id = resp.events().empty() ? 0 : resp.events().rbegin()->id();
    } else {
      // Oldest first, all above last_id (a controller older than after_id
      // answers the newest window instead: the check keeps its repeats out).
      const int64_t printed_before = last_id;
      for (const auto& e : resp.events()) {
        if (e.id() <= last_id) continue;
        if (int rc = printer.Change(EventRow(e, now), ProtoToJson(e), absl::StrCat(e.id())); rc != kExitOk) {
          return rc;
        }
        last_id = e.id();
      }
      // A full page that was new: more may wait above it; read them now.
      if (resp.events_size() == kLimit && last_id > printed_before) continue;
    }
    SleepUnlessStopped(kPollEvery);
  }
  return kExitOk;
}

}  // namespace dcu::dcuctl
