// dcuctl: the command line for dcufleet. Parses flags and dispatches to one
// file per command group; each returns the process exit code (exit_codes.h).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "common/version.h"
#include "dcuctl/client.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/node_commands.h"

int main(int argc, char** argv) {
  using namespace dcu::dcuctl;
  GlobalOptions g;
  if (const char* env = std::getenv("DCUFLEET_CONTROLLER"); env && *env) g.controller = env;

  CLI::App app{"dcuctl: run large language models on a fleet of accelerators"};
  app.require_subcommand(1);
  app.add_option("--controller", g.controller,
                 "controller HOST:PORT (default $DCUFLEET_CONTROLLER or 127.0.0.1:7070)");
  app.add_option("-o,--output", g.output, "output format: table|wide|json|yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  app.add_option("--timeout", g.timeout_s, "seconds to wait for the controller")
      ->check(CLI::PositiveNumber);

  auto* version = app.add_subcommand("version", "print client and controller versions");

  auto* get = app.add_subcommand("get", "list objects")->require_subcommand(1);
  auto* get_nodes = get->add_subcommand("nodes", "list nodes")->alias("node");

  auto* describe = app.add_subcommand("describe", "show one object in detail")->require_subcommand(1);
  std::string node_name;
  auto* describe_node = describe->add_subcommand("node", "show a node's devices, memory views, "
                                                         "holders and findings");
  describe_node->add_option("NAME", node_name, "node name")->required();

  // -o may also follow the subcommand, as with kubectl.
  for (CLI::App* sub : {get_nodes, describe_node}) {
    sub->add_option("-o,--output", g.output, "output format: table|wide|json|yaml")
        ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  Client client(g);
  if (*version) {
    std::cout << "Client version: " << dcu::common::kVersion << "\n";
    dcufleet::v1::GetVersionRequest req;
    dcufleet::v1::GetVersionResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub().GetVersion(ctx.get(), req, &resp);
    if (!s.ok()) return client.Fail(s, "asking the controller's version", std::cerr);
    std::cout << "Controller version: " << resp.version() << " (schema " << resp.schema_version()
              << ", database '" << resp.db_path() << "')\n";
    return kExitOk;
  }
  if (*get_nodes) return RunGetNodes(client, std::cout, std::cerr);
  if (*describe_node) return RunDescribeNode(client, node_name, std::cout, std::cerr);
  return kExitUsage;
}
