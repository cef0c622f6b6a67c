#pragma once

// dcuctl config get-contexts | current-context | use-context NAME |
//   set-context NAME [--controller ADDR] [--ca FILE] [--cert FILE] [--key FILE]
//   [--token-file FILE] | delete-context NAME
// The file and its format: contexts.h. Exit 0, 3 for a context that does not
// exist, 2 for a malformed file or bad value, 1 when it cannot be written.

#include <ostream>
#include <string>

#include "dcuctl/contexts.h"

namespace dcu::dcuctl {

struct SetContextArgs {
  std::string name;
  // Given on the command line (empty: keep what the context has).
  std::string controller, ca, cert, key, token_file;
};

int RunGetContexts(const ConfigLocation& where, std::ostream& out, std::ostream& err);
int RunCurrentContext(const ConfigLocation& where, std::ostream& out, std::ostream& err);
int RunUseContext(const ConfigLocation& where, const std::string& name, std::ostream& out,
                  std::ostream& err);
int RunSetContext(const ConfigLocation& where, const SetContextArgs& args, std::ostream& out,
                  std::ostream& err);
int RunDeleteContext(const ConfigLocation& where, const std::string& name, std::ostream& out,
                     std::ostream& err);

}  // namespace dcu::dcuctl
