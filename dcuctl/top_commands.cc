#include "dcuctl/top_commands.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/units.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/query.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::dcuctl {
namespace {

// "118.0 GiB" with "(2 devices unread)" when a view is missing on some.
std::string UsedText(int64_t used, int missing, int devices) {
  if (missing == devices) return "-";
  std::string text = common::HumanBytes(used);
  if (missing > 0) absl::StrAppend(&text, " (", missing, " unread)");
  return text;
}

std::string PercentText(int64_t used, int64_t total, int missing, int devices) {
  if (missing == devices || total <= 0) return "-";
  return absl::StrFormat("%d%%", static_cast<int>(100.0 * static_cast<double>(used) / total + 0.5));
}

// The five figure cells of a row; a node that is not Ready has none to
// show (its last report may be long gone), as kubectl top shows a node
// without metrics.
std::vector<std::string> Figures(const MemoryUse& m, bool ready) {
  if (!ready) return std::vector<std::string>(5, "<unknown>");
  return {UsedText(m.used_device_view, m.device_view_missing, m.devices),
          PercentText(m.used_device_view, m.total_device_view, m.device_view_missing, m.devices),
          UsedText(m.used_smi_view, m.smi_view_missing, m.devices),
          m.unreclaimed > 0 ? common::HumanBytes(m.unreclaimed) : "0", absl::StrCat(m.holders)};
}

template <typename Row>
void SortRows(std::vector<Row>* rows, TopSort sort) {
  if (sort == TopSort::kName) return;
  std::stable_sort(rows->begin(), rows->end(), [sort](const Row& a, const Row& b) {
    return sort == TopSort::kMemory ? a.use.used_device_view > b.use.used_device_view
                                    : a.use.unreclaimed > b.use.unreclaimed;
  });
}

}  // namespace

MemoryUse MemoryUseOf(const dcufleet::v1::Device& d) {
  MemoryUse m;
  m.devices = 1;
  if (d.total().valid()) m.total = d.total().bytes();
  if (d.total().valid() && d.device_free().valid()) {
    m.used_device_view = std::max<int64_t>(0, d.total().bytes() - d.device_free().bytes());
    m.total_device_view = d.total().bytes();
  } else {
    m.device_view_missing = 1;
  }
  if (d.total().valid() && d.host_free().valid()) {
    m.used_smi_view = std::max<int64_t>(0, d.total().bytes() - d.host_free().bytes());
  } else {
    m.smi_view_missing = 1;
  }
  m.unreclaimed = std::max<int64_t>(0, d.unreclaimed_bytes());
  m.holders = d.holders_size();
  return m;
}

MemoryUse MemoryUseOf(const dcufleet::v1::NodeInventory& inventory) {
  MemoryUse sum;
  for (const auto& d : inventory.devices()) {
    const MemoryUse m = MemoryUseOf(d);
    sum.devices += 1;
    sum.total += m.total;
    sum.used_device_view += m.used_device_view;
    sum.total_device_view += m.total_device_view;
    sum.device_view_missing += m.device_view_missing;
    sum.used_smi_view += m.used_smi_view;
    sum.smi_view_missing += m.smi_view_missing;
    sum.unreclaimed += m.unreclaimed;
    sum.holders += m.holders;
  }
  return sum;
}

absl::StatusOr<TopSort> ParseTopSort(const std::string& text) {
  if (text.empty() || text == "name") return TopSort::kName;
  if (text == "memory") return TopSort::kMemory;
  if (text == "unreclaimed") return TopSort::kUnreclaimed;
  return absl::InvalidArgumentError(
      absl::StrCat("--sort-by '", text, "' is not one of: memory, unreclaimed, name"));
}

Table TopNodesTable(const std::vector<dcufleet::v1::NodeView>& nodes, TopSort sort) {
  struct Row {
    const dcufleet::v1::NodeView* node;
    MemoryUse use;
  };
  std::vector<Row> rows;
  for (const auto& n : nodes) rows.push_back({&n, MemoryUseOf(n.inventory())});
  SortRows(&rows, sort);
  Table t({"NAME", "DEVICES", "MEMORY(DEVICE)", "MEMORY%", "MEMORY(SMI)", "UNRECLAIMED", "HOLDERS"});
  for (const Row& r : rows) {
    std::vector<std::string> row = {r.node->name(), absl::StrCat(r.use.devices)};
    for (std::string& f : Figures(r.use, r.node->state() == dcufleet::v1::NODE_READY)) {
      row.push_back(std::move(f));
    }
    t.AddRow(std::move(row));
  }
  return t;
}

Table TopDevicesTable(const dcufleet::v1::NodeView& node, TopSort sort) {
  struct Row {
    const dcufleet::v1::Device* device;
    MemoryUse use;
  };
  std::vector<Row> rows;
  for (const auto& d : node.inventory().devices()) rows.push_back({&d, MemoryUseOf(d)});
  SortRows(&rows, sort);
  Table t({"IDX", "ARCH", "MEMORY(DEVICE)", "MEMORY%", "MEMORY(SMI)", "UNRECLAIMED", "HOLDERS"});
  const bool ready = node.state() == dcufleet::v1::NODE_READY;
  for (const Row& r : rows) {
    std::vector<std::string> row = {absl::StrCat(r.device->index()),
                                    r.device->arch().empty() ? "unknown" : r.device->arch()};
    for (std::string& f : Figures(r.use, ready)) row.push_back(std::move(f));
    t.AddRow(std::move(row));
  }
  return t;
}

int RunTopNodes(Client& client, const std::string& name, const std::string& sort_by,
                std::ostream& out, std::ostream& err) {
  const std::string& fmt = client.options().output;
  if (!fmt.empty() && fmt != "table" && fmt != "wide") {
    err << "error: top prints a table; the figures it sums are in: dcuctl get nodes"
        << (name.empty() ? "" : absl::StrCat(" ", name)) << " -o " << fmt << "\n";
    return kExitUsage;
  }
  absl::StatusOr<TopSort> sort = ParseTopSort(sort_by);
  if (!sort.ok()) {
    err << "error: " << sort.status().message() << "\n";
    return kExitUsage;
  }
  if (!name.empty()) {
    dcufleet::v1::GetNodeRequest req;
    req.set_name(name);
    QueryView<dcufleet::v1::NodeView> view;
    view.render = [&](const dcufleet::v1::NodeView& node, const std::string&) {
      TopDevicesTable(node, *sort).Print(out, !client.options().no_headers);
      if (node.state() != dcufleet::v1::NODE_READY) {
        err << "node '" << name << "' is " << common::NodeStateName(node.state())
            << ": its last figures are not shown (dcuctl describe node " << name << ")\n";
      }
      return kExitOk;
    };
    return RunQuery(client, &dcufleet::v1::FleetService::Stub::GetNode, req,
                    absl::StrCat("reading node '", name, "'"), view, out, err);
  }
  QueryView<dcufleet::v1::ListNodesResponse> view;
  view.render = [&](const dcufleet::v1::ListNodesResponse& resp, const std::string&) {
    if (resp.nodes().empty()) {
      err << "No nodes registered. Start dcu-agent --controller " << client.options().controller
          << " on a node.\n";
      return kExitOk;
    }
    TopNodesTable({resp.nodes().begin(), resp.nodes().end()}, *sort)
        .Print(out, !client.options().no_headers);
    return kExitOk;
  };
  return RunQuery(client, &dcufleet::v1::FleetService::Stub::ListNodes,
                  dcufleet::v1::ListNodesRequest(), "listing nodes", view, out, err);
}

}  // namespace dcu::dcuctl
