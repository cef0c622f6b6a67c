#pragma once

#include <ostream>
#include <string>

namespace dcu::dcuctl {

// `dcuctl progress --log FILE [-o table|json]`: offline, the start-up phase
// of an engine's log and the figures it shows (shards with rate and ETA,
// weights GiB and seconds, torch.compile, graphs captured, KV cache GiB /
// blocks / tokens, maximum concurrency), each with the line it came from.
// The same parser the agent runs (modelkit/startup_progress.h). A failed
// start-up also gets the diagnosis of the built-in rules.
// Reads at most the last 64 MiB of the file. Exit codes: 0 (any phase,
// including none proven), 2 usage or input error.
struct ProgressLogArgs {
  std::string log_path;
  std::string output = "table";
};

int RunProgressLog(const ProgressLogArgs& args, std::ostream& out, std::ostream& err);

}  // namespace dcu::dcuctl
