#pragma once

// dcuctl pki: the certificates and tokens a secure deployment needs, made
// with the `openssl` CLI (run as an argv vector through
// common::ProcessRunner, never a shell). Works offline.
//
//   dcuctl pki init DIR [--host NAME_OR_IP]... [--days N]
//       DIR/ca.crt, DIR/ca.key                   the fleet's CA (10 years)
//       DIR/controller.crt, DIR/controller.key   the controller's server
//           certificate; SANs: localhost, 127.0.0.1, ::1, this host's name
//           and every --host
//   dcuctl pki issue node NAME [--dir DIR] [--days N]
//       DIR/nodes/NAME.crt, .key                 CN=NAME, O=node
//   dcuctl pki issue user NAME --role admin|read-only [--dir DIR] [--days N]
//       DIR/users/NAME.crt, .key                 CN=NAME, O=<role>
//   dcuctl pki token NAME --role admin|read-only [--dir DIR]
//       DIR/tokens/NAME.token                    the secret (give it to NAME)
//       DIR/tokens.txt                           "sha256hex role name" line
//                                                appended (--tokens-file)
// Keys and tokens are written 0600 in directories made 0700; nothing is
// overwritten (an existing file is an error naming it). Leaf certificates
// last 365 days by default. Exit codes: 0 ok, 1 failure (openssl failed, a
// file exists), 2 usage (bad name or role).

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "common/process_runner.h"

namespace CLI {
class App;
}

namespace dcu::dcuctl {

struct PkiArgs {
  // "init", "issue-node", "issue-user", "token".
  std::string action;
  std::string dir;
  std::string name;
  std::string role;
  std::vector<std::string> hosts;
  // 0: 3650 for the CA, 825 for the controller, 365 for leaves.
  int days = 0;
  // The openssl program (tests may point at another build).
  std::string openssl = "openssl";
};

int RunPki(const PkiArgs& args, common::ProcessRunner& runner, std::ostream& out, std::ostream& err);

// The `pki` command group on dcuctl's command line. main.cc:
//   auto pki = PkiCommands::Add(&app);
//   ... parse ...
//   if (pki->selected()) return pki->Run(std::cout, std::cerr);
class PkiCommands {
 public:
  static std::unique_ptr<PkiCommands> Add(CLI::App* app);
  bool selected() const;
  int Run(std::ostream& out, std::ostream& err);

 private:
  PkiCommands() = default;
  PkiArgs args_;
  CLI::App* init_ = nullptr;
  CLI::App* issue_node_ = nullptr;
  CLI::App* issue_user_ = nullptr;
  CLI::App* token_ = nullptr;
};

}  // namespace dcu::dcuctl
