#pragma once

// dcuctl completion bash|zsh: a shell completion script generated from the
// CLI11 definition itself (every command, alias and option), so that it
// cannot drift from the binary.
//   source <(dcuctl completion bash)             # or put it in
//   dcuctl completion bash > /etc/bash_completion.d/dcuctl
//   source <(dcuctl completion zsh)              # zsh, via bashcompinit
// It completes command words and options at each level, -o's values, and
// file names for the other options that take a value.

#include <string>

#include <CLI/CLI.hpp>

namespace dcu::dcuctl {

// The bash script; it defines _dcuctl and registers it for `dcuctl`.
std::string BashCompletion(const CLI::App& app);
// The same through zsh's bashcompinit.
std::string ZshCompletion(const CLI::App& app);

}  // namespace dcu::dcuctl
