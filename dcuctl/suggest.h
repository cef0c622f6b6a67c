#pragma once

// "Did you mean" for dcuctl: when the command line names a command that does
// not exist ("dcuctl gte nodes", "dcuctl get nodez"), CLI11 only says "A
// subcommand is required". This walks the command tree along argv and, at the
// first word that is no command there, names it and the closest commands.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dcu::dcuctl {

// Empty when every command word in `args` (argv without argv[0]) is known,
// else a message such as:
//   unknown command 'nodez' for 'dcuctl get'
//   Did you mean 'get nodes'?
//   Run 'dcuctl get --help' for the commands it has.
std::string UnknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args);

// Levenshtein distance (for the suggestion; exposed for its test).
int EditDistance(const std::string& a, const std::string& b);

}  // namespace dcu::dcuctl
