// dcu-agent: reports this node's accelerators to the controller and runs the
// instances assigned to it. `dcu-agent inventory` prints the node report
// offline (the first thing to run on a broken node).
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/link/controller_link.h"
#include "agent/link/link_security.h"
#include "agent/probe/sysfs_kfd_device_probe.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/version.h"
#include "google/protobuf/util/json_util.h"

namespace {

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

dcufleet::v1::NodeInventory Collect(const std::string& root) {
  dcufleet::v1::NodeInventory inv;
  dcu::agent::SysfsKfdDeviceProbe probe(root);
  auto devices = probe.Enumerate();
  if (devices.ok()) {
    for (auto& d : *devices) *inv.add_devices() = std::move(d);
    inv.add_probe_log(absl::StrCat("sysfs_kfd: ", inv.devices_size(), " devices"));
  } else {
    auto* f = inv.add_findings();
    f->set_severity(devices.status().code() == absl::StatusCode::kNotFound ? "info" : "error");
    f->set_code("probe_sysfs_kfd_failed");
    f->set_field("sysfs_kfd");
    f->set_message(std::string(devices.status().message()));
    inv.add_probe_log(absl::StrCat("sysfs_kfd: ", devices.status().message()));
  }
  utsname u;
  if (uname(&u) == 0) {
    inv.set_hostname(u.nodename);
    inv.set_kernel_release(u.release);
  }
  inv.set_collected_at_ms(absl::ToUnixMillis(absl::Now()));
  return inv;
}

}  // namespace

int main(int argc, char** argv) {
  dcu::common::SetLogComponent("dcu-agent");
  CLI::App app{"dcu-agent: reports a node's accelerators to dcu-controller and runs its instances"};
  app.set_version_flag("--version", dcu::common::kVersion);
  std::string controller = "127.0.0.1:7070";
  std::string node;
  std::string root = "/";
  double status_interval_s = 5, max_backoff_s = 30;
  app.add_option("--controller", controller, "controller HOST:PORT to dial");
  app.add_option("--node", node, "node name (default: the host name)");
  app.add_option("--root", root, "filesystem root to read sys/, proc/, dev/ from (tests, fixtures)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--status-interval", status_interval_s,
                 "seconds between reports until the controller says otherwise")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-backoff", max_backoff_s, "cap of the reconnect back-off, seconds")
      ->check(CLI::PositiveNumber);

  dcu::agent::AgentSecurityOptions security_options;
  dcu::agent::AddAgentSecurityFlags(&app, &security_options);
  auto* inventory_cmd = app.add_subcommand("inventory", "print this node's report and exit");
  std::string output = "table";
  inventory_cmd->add_option("-o,--output", output, "table|json")
      ->check(CLI::IsMember({"table", "json"}));
  inventory_cmd->add_option("--root", root, "filesystem root")->check(CLI::ExistingDirectory);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit 0; every usage error exits 2.
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (*inventory_cmd) {
    dcufleet::v1::NodeInventory inv = Collect(root);
    if (output == "json") {
      std::string json;
      google::protobuf::util::JsonPrintOptions o;
      o.add_whitespace = true;
      o.preserve_proto_field_names = true;
      (void)google::protobuf::util::MessageToJsonString(inv, &json, o);
      std::cout << json;
    } else {
      for (const auto& d : inv.devices()) {
        std::cout << d.index() << "  " << d.product_name() << "  " << d.arch() << "  "
                  << d.pci_bus() << "\n";
      }
      for (const auto& f : inv.findings()) std::cout << f.severity() << ": " << f.message() << "\n";
    }
    return 0;
  }

  if (node.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    node = host;
  }
  std::string why = dcu::common::ValidateName("--node", node);
  if (!why.empty()) {
    std::cerr << "dcu-agent: " << why << "\n";
    return 2;
  }

  dcu::agent::LinkCallbacks cb;
  cb.make_hello = [&] {
    dcufleet::v1::Hello h;
    h.set_node_name(node);
    h.set_agent_version(dcu::common::kVersion);
    h.add_capabilities("inventory");
    *h.mutable_inventory() = Collect(root);
    return h;
  };
  cb.make_status = [&] {
    dcufleet::v1::NodeStatus s;
    *s.mutable_inventory() = Collect(root);
    s.set_sent_at_ms(absl::ToUnixMillis(absl::Now()));
    return s;
  };
  auto credentials = dcu::agent::MakeAgentCredentials(security_options, node, controller);
  if (!credentials.ok()) {
    std::cerr << "dcu-agent: " << credentials.status().message() << "\n";
    return 2;
  }
  dcu::agent::ControllerLink::Options lo;
  lo.credentials = *credentials;
  lo.controller_address = controller;
  lo.status_interval = absl::Seconds(status_interval_s);
  lo.max_backoff = absl::Seconds(max_backoff_s);
  dcu::agent::ControllerLink link(lo, cb);
  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  DCU_LOG_INFO("dcu-agent ", dcu::common::kVersion, " node '", node, "' root '", root,
               "' dialing ", controller);
  link.Start();
  while (!g_stop) absl::SleepFor(absl::Milliseconds(100));
  link.Stop();
  return 0;
}
