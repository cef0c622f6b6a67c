#include "dcuctl/node_commands.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/enum_names.h"
#include "common/units.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/object_ref.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "modelkit/memory_plan.h"

namespace dcu::dcuctl {
namespace {

std::string Bytes(const dcufleet::v1::MemoryReading& r) {
  return r.valid() ? common::HumanBytes(r.bytes()) : "-";
}

// "8x K100_AI" / "4x Z100, 1x BW1000".
std::string DeviceSummary(const dcufleet::v1::NodeInventory& inv) {
  std::map<std::string, int> count;
  for (const auto& d : inv.devices()) count[d.product_name().empty() ? "?" : d.product_name()]++;
  std::vector<std::string> parts;
  for (const auto& [name, n] : count) parts.push_back(absl::StrCat(n, "x ", name));
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

std::string Arches(const dcufleet::v1::NodeInventory& inv) {
  std::set<std::string> arches;
  for (const auto& d : inv.devices()) arches.insert(d.arch().empty() ? "unknown" : d.arch());
  return arches.empty() ? "-" : absl::StrJoin(arches, ",");
}

// The free memory a new placement could use: the scheduler's figure of each
// device it would place on. A placement never shares a device with an
// instance, so the memory left beside a serving engine (a tenth of the card
// at --gpu-memory-utilization 0.9) is not free capacity; nor is a device the
// scheduler's own rule blocks (modelkit::DeviceBlockOf: stranded memory, a
// holder to reap). A process dcufleet did not start leaves the device
// placeable, its memory already out of the figure.
int64_t SchedulableFree(const dcufleet::v1::NodeInventory& inv) {
  int64_t total = 0;
  for (const auto& d : inv.devices()) {
    const bool instance_holds =
        std::any_of(d.holders().begin(), d.holders().end(), [](const dcufleet::v1::ProcessHolder& h) {
          return h.holder_class() == dcufleet::v1::HOLDER_MANAGED;
        });
    if (d.schedulable_free().valid() && !instance_holds &&
        modelkit::DeviceBlockOf(d, common::kUnreclaimedToleranceBytes) == modelkit::DeviceBlock::kNone) {
      total += d.schedulable_free().bytes();
    }
  }
  return total;
}

// The batch job the agent runs inside (issue 20): "slurm 12 (dcu), 28m
// left"; "-" for a node the agent owns whole.
std::string JobText(const dcufleet::v1::NodeInventory& inv) {
  if (!inv.has_allocation()) return "-";
  const auto& a = inv.allocation();
  std::string text = absl::StrCat(a.scheduler(), " ", a.job_id());
  if (!a.partition().empty()) absl::StrAppend(&text, " (", a.partition(), ")");
  if (a.end_time_ms() > 0) {
    // Whole minutes: a watch re-prints a row when its text changes.
    int64_t minutes = (a.end_time_ms() - absl::ToUnixMillis(absl::Now())) / 60000;
    if (minutes < 0) {
      absl::StrAppend(&text, ", ended");
    } else if (minutes < 60) {
      absl::StrAppend(&text, ", ", minutes, "m left");
    } else {
      absl::StrAppend(&text, ", ", minutes / 60, "h", absl::StrFormat("%02d", minutes % 60), "m left");
    }
  }
  return text;
}

}  // namespace

std::vector<std::string> NodeRow(const dcufleet::v1::NodeView& n, bool wide) {
  // kubectl shows a cordoned node as "Ready,SchedulingDisabled"; a draining
  // one here reads "Ready,Draining".
  std::string status(common::NodeStateName(n.state()));
  if (n.has_drain() && n.state() != dcufleet::v1::NODE_LOST) absl::StrAppend(&status, ",Draining");
  if (n.has_cordon()) absl::StrAppend(&status, ",SchedulingDisabled");
  std::vector<std::string> row = {n.name(), status,
                                  DeviceSummary(n.inventory()), Arches(n.inventory()),
                                  Ago(n.last_seen_ms()), n.agent_version()};
  if (wide) {
    int findings = n.inventory().findings_size();
    for (const auto& d : n.inventory().devices()) findings += d.findings_size();
    // A node the scheduler places nothing on (not Ready, drained, cordoned)
    // has none of its free memory to schedule on.
    const bool takes_none = modelkit::NodeBlockOf(n) != modelkit::NodeBlock::kNone;
    row.push_back(common::HumanBytes(takes_none ? 0 : SchedulableFree(n.inventory())));
    row.push_back(absl::StrCat(findings));
    row.push_back(JobText(n.inventory()));
    row.push_back(n.state_reason());
  }
  return row;
}

Table NodesTable(const dcufleet::v1::ListNodesResponse& resp, bool wide) {
  std::vector<std::string> header = {"NAME", "STATUS", "DEVICES", "ARCH", "LAST SEEN", "AGENT"};
  if (wide) {
    header.push_back("SCHEDULABLE FREE");
    header.push_back("FINDINGS");
    header.push_back("JOB");
    header.push_back("REASON");
  }
  Table t(header);
  for (const auto& n : resp.nodes()) t.AddRow(NodeRow(n, wide));
  return t;
}

int RunGetNodes(Client& client, const std::string& name, std::ostream& out, std::ostream& err) {
  if (!name.empty()) {
    // `get node NAME`: that node's row (its object with -o json|yaml).
    dcufleet::v1::GetNodeRequest req;
    req.set_name(name);
    QueryView<dcufleet::v1::NodeView> one;
    one.names = [](const dcufleet::v1::NodeView& n) {
      return std::vector<std::string>{absl::StrCat("node/", n.name())};
    };
    one.render = [&](const dcufleet::v1::NodeView& n, const std::string& fmt) {
      dcufleet::v1::ListNodesResponse list;
      *list.add_nodes() = n;
      NodesTable(list, fmt == "wide").Print(out, !client.options().no_headers);
      return kExitOk;
    };
    return RunQuery(client, &dcufleet::v1::FleetService::Stub::GetNode, req,
                    absl::StrCat("getting node '", name, "'"), one, out, err);
  }
  QueryView<dcufleet::v1::ListNodesResponse> view;
  view.structured = [](const dcufleet::v1::ListNodesResponse& resp) {
    return ProtoToJsonListing(resp, {"nodes"});
  };
  view.items = "nodes";
  view.names = [](const dcufleet::v1::ListNodesResponse& resp) {
    std::vector<std::string> names;
    for (const auto& n : resp.nodes()) names.push_back(absl::StrCat("node/", n.name()));
    return names;
  };
  view.render = [&](const dcufleet::v1::ListNodesResponse& resp, const std::string& fmt) {
    if (resp.nodes().empty()) {
      err << "No nodes registered. Start dcu-agent --controller " << client.options().controller
          << " on a node.\n";
      return kExitOk;
    }
    NodesTable(resp, fmt == "wide").Print(out, !client.options().no_headers);
    return kExitOk;
  };
  return RunQuery(client, &dcufleet::v1::FleetService::Stub::ListNodes,
                  dcufleet::v1::ListNodesRequest(), "listing nodes", view, out, err);
}

void PrintNodeDescription(const dcufleet::v1::NodeView& n, std::ostream& out) {
  const auto& inv = n.inventory();
  out << "Name:           " << n.name() << "\n";
  out << "Node ID:        " << n.node_id() << "\n";
  out << "Status:         " << std::string(common::NodeStateName(n.state()));
  if (!n.state_reason().empty()) out << " (" << n.state_reason() << ")";
  out << "\n";
  if (n.has_drain()) {
    out << "Draining:       " << n.drain().reason() << "; since " << Ago(n.drain().since_ms())
        << ", what still runs stops "
        << absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMillis(n.drain().deadline_ms()),
                            absl::UTCTimeZone())
        << "\n";
  }
  if (n.has_cordon()) {
    out << (n.cordon().drain() ? "Drained:        " : "Cordoned:       ")
        << (n.cordon().reason().empty() ? "(no reason given)" : n.cordon().reason()) << "; since "
        << Ago(n.cordon().since_ms())
        << (n.cordon().drain() ? ": nothing new is placed here and its replicas are moved"
                               : ": nothing new is placed here; what runs stays")
        << " (dcuctl uncordon " << n.name() << ")\n";
  }
  out << "Agent:          " << n.agent_version() << "\n";
  out << "Last seen:      " << Ago(n.last_seen_ms()) << "\n";
  out << "Registered:     " << Ago(n.registered_at_ms()) << "\n";
  if (!inv.hostname().empty()) out << "Host:           " << inv.hostname() << "\n";
  if (!inv.driver_version().empty()) out << "Driver:         " << inv.driver_version() << "\n";
  if (inv.foreign_listen_ports_size() > 0) {
    // Held by other services: no instance is given one of them.
    std::vector<int> ports(inv.foreign_listen_ports().begin(), inv.foreign_listen_ports().end());
    constexpr size_t kShown = 16;
    std::string shown = absl::StrJoin(ports.begin(), ports.begin() + std::min(ports.size(), kShown), ", ");
    if (ports.size() > kShown) absl::StrAppend(&shown, ", … (", ports.size(), " in all; -o json lists them)");
    out << "Ports in use:   " << shown << " (other services; no instance is given these)\n";
  }
  out << "Devices:        " << DeviceSummary(inv) << "\n\n";
  Table t({"IDX", "PRODUCT", "ARCH", "PCI", "TOTAL", "HOST FREE", "DEVICE FREE", "UNRECLAIMED",
           "HOLDERS"});
  for (const auto& d : inv.devices()) {
    t.AddRow({absl::StrCat(d.index()), d.product_name(), d.arch().empty() ? "unknown" : d.arch(),
              d.pci_bus(), Bytes(d.total()), Bytes(d.host_free()), Bytes(d.device_free()),
              d.unreclaimed_bytes() ? common::HumanBytes(d.unreclaimed_bytes()) : "0",
              absl::StrCat(d.holders_size())});
  }
  t.Print(out);
  // Where each figure came from, so a person can judge it.
  out << "\nSources:\n";
  for (const auto& d : inv.devices()) {
    std::vector<std::string> src;
    if (!d.arch_source().empty()) src.push_back(absl::StrCat("arch=", d.arch_source()));
    if (d.total().valid()) src.push_back(absl::StrCat("total=", d.total().source()));
    if (d.host_free().valid()) src.push_back(absl::StrCat("host_free=", d.host_free().source()));
    if (d.device_free().valid()) src.push_back(absl::StrCat("device_free=", d.device_free().source()));
    out << "  " << d.index() << ": " << (src.empty() ? "-" : absl::StrJoin(src, " ")) << "\n";
  }
  bool any_holder = false;
  for (const auto& d : inv.devices()) {
    for (const auto& h : d.holders()) {
      if (!any_holder) {
        out << "\nProcesses holding devices:\n";
        any_holder = true;
      }
      out << "  device " << d.index() << ": pid " << h.pid() << " (" << common::HolderClassName(h.holder_class())
          << ", state "
          << h.state() << ", ppid " << h.ppid() << (h.parent_alive() ? "" : " exited") << ")"
          << (h.vram_bytes() > 0 ? absl::StrCat(" ", common::HumanBytes(h.vram_bytes())) : "")
          << (h.holder_class() == dcufleet::v1::HOLDER_EXITED ? " (no live process: KFD record only)"
                                  : absl::StrCat(" `", h.cmdline().substr(0, 80), "`"))
          << "\n";
    }
  }
  for (const auto& h : inv.unattributed_holders()) {
    if (!any_holder) {
      out << "\nProcesses holding devices:\n";
      any_holder = true;
    }
    out << "  device ?: pid " << h.pid() << " (" << common::HolderClassName(h.holder_class())
        << ", state " << h.state() << ", ppid "
        << h.ppid() << (h.parent_alive() ? "" : " exited") << ") `" << h.cmdline().substr(0, 80)
        << "` (holds /dev/kfd; device not identified)\n";
  }
  std::vector<std::string> findings;
  for (const auto& f : inv.findings()) {
    findings.push_back(
        absl::StrCat("  ", common::FindingSeverityName(f.severity()), " ", f.code(), ": ", f.message()));
  }
  for (const auto& d : inv.devices()) {
    for (const auto& f : d.findings()) {
      findings.push_back(absl::StrCat("  device ", d.index(), ": ",
                                      common::FindingSeverityName(f.severity()), " ", f.code(),
                                      ": ", f.message()));
    }
  }
  out << "\nFindings:" << (findings.empty() ? " none" : "") << "\n";
  for (const auto& f : findings) out << f << "\n";
  if (!n.instances().empty()) {
    out << "\nInstances:\n";
    for (const auto& i : n.instances()) {
      out << "  " << i.instance_id() << "  " << dcufleet::v1::InstancePhase_Name(i.phase())
          << "  pid " << i.pid() << "  port " << i.port() << "\n";
    }
  }
}

int RunDescribeNode(Client& client, const std::string& name, std::ostream& out,
                    std::ostream& err) {
  dcufleet::v1::GetNodeRequest req;
  req.set_name(name);
  QueryView<dcufleet::v1::NodeView> view;
  view.render = [&](const dcufleet::v1::NodeView& node, const std::string&) {
    PrintNodeDescription(node, out);
    return kExitOk;
  };
  return RunQuery(client, &dcufleet::v1::FleetService::Stub::GetNode, req,
                  absl::StrCat("describing node '", name, "'"), view, out, err);
}

}  // namespace dcu::dcuctl

namespace dcu::dcuctl {

namespace {

// Replicas whose latest attempt is on `node`, as "deployment/replica".
std::vector<std::string> ReplicasOn(const dcufleet::v1::ListDeploymentsResponse& list, const std::string& node) {
  std::vector<std::string> out;
  for (const auto& d : list.deployments()) {
    for (const auto& r : d.replicas()) {
      if (r.node() == node) out.push_back(absl::StrCat(d.spec().name(), "/", r.index()));
    }
  }
  return out;
}

// Why replacements wait: each Unschedulable replica of a deployment that
// still has a replica on `node`, with what its status says (no node fits,
// and why for each).
std::vector<std::string> StuckReplacements(const dcufleet::v1::ListDeploymentsResponse& list,
                                           const std::string& node) {
  std::vector<std::string> out;
  for (const auto& d : list.deployments()) {
    bool there = false;
    for (const auto& r : d.replicas()) there |= r.node() == node;
    if (!there) continue;
    for (const auto& r : d.replicas()) {
      if (r.phase() == dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE) {
        out.push_back(absl::StrCat(d.spec().name(), "/", r.index(), " cannot be placed: ", r.message()));
      }
    }
  }
  return out;
}

}  // namespace

int RunCordon(Client& client, const CordonArgs& given, std::ostream& out, std::ostream& err) {
  using Action = CordonArgs::Action;
  CordonArgs args = given;
  if (args.node.find('/') != std::string::npos) {
    // kubectl's node/NAME.
    absl::StatusOr<ObjectRef> ref = ParseObjectRef(args.node);
    if (!ref.ok() || ref->kind != "node") {
      err << "error: " << (ref.ok() ? absl::StrCat("'", args.node, "' is not a node: give NAME or node/NAME")
                                    : std::string(ref.status().message()))
          << "\n";
      return kExitUsage;
    }
    args.node = ref->name;
  }
  dcufleet::v1::CordonNodeRequest req;
  req.set_name(args.node);
  if (args.action != Action::kUncordon) {
    req.mutable_cordon()->set_reason(args.reason);
    req.mutable_cordon()->set_drain(args.action == Action::kDrain);
  }
  dcufleet::v1::NodeView node;
  const char* verb = args.action == Action::kCordon ? "cordoning" : args.action == Action::kDrain ? "draining" : "uncordoning";
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::CordonNode, req, &node);
  if (!s.ok()) return client.Fail(s, absl::StrCat(verb, " node '", args.node, "'"), err);
  const char* done = args.action == Action::kCordon ? "cordoned" : args.action == Action::kDrain ? "draining" : "uncordoned";
  out << "node/" << args.node << " " << done << "\n";
  if (args.action != Action::kDrain) return kExitOk;
  dcufleet::v1::ListDeploymentsResponse list;
  const absl::Time deadline =
      args.timeout_s > 0 ? absl::Now() + absl::Seconds(args.timeout_s) : absl::InfiniteFuture();
  std::string said;
  while (true) {
    s = CallFleet(client, &dcufleet::v1::FleetService::Stub::ListDeployments, dcufleet::v1::ListDeploymentsRequest(),
                  &list);
    if (!s.ok()) return client.Fail(s, absl::StrCat("listing what runs on node '", args.node, "'"), err);
    const std::vector<std::string> left = ReplicasOn(list, args.node);
    if (left.empty()) {
      out << "node/" << args.node << " drained\n";
      return kExitOk;
    }
    if (!args.wait) {
      out << left.size() << " replica(s) to move: " << absl::StrJoin(left, ", ")
          << " (each once its replacement is Ready; dcuctl get deployments shows them)\n";
      return kExitOk;
    }
    const std::string now = absl::StrJoin(left, ", ");
    const std::vector<std::string> stuck = StuckReplacements(list, args.node);
    const std::string saying = absl::StrCat(now, "\n", absl::StrJoin(stuck, "\n"));
    if (saying != said) {
      err << "waiting for " << left.size() << " replica(s) to move off " << args.node << ": " << now << "\n";
      // Make-before-break: a replica whose replacement has nowhere to go
      // keeps serving here; say why, not only that it waits.
      for (const std::string& s : stuck) err << "  " << s << "\n";
      said = saying;
    }
    if (absl::Now() >= deadline) {
      err << "error: node '" << args.node << "' still runs " << now << " after " << args.timeout_s
          << " s: a replacement may have nowhere to go (dcuctl describe deployment NAME says why)\n";
      return kExitFailed;
    }
    absl::SleepFor(absl::Seconds(1));
  }
}

}  // namespace dcu::dcuctl
