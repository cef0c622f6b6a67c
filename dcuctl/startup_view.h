#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "dcufleet/v1/types.pb.h"
#include "nlohmann/json.hpp"

namespace dcu::dcuctl {

// How dcuctl shows a start-up's phase and figures (StartupProgress, read by
// modelkit/startup_progress.h): `dcuctl progress`, `deploy --watch` and
// `describe deployment` all print through here, so they say the same.

// "[#########.....................] 7/17"; "" when total <= 0.
std::string ProgressBar(int64_t done, int64_t total, int width = 30);

// One line: "loading_weights (shard 7/17) [####....] 7/17 5.10 s/shard, ETA 51s"
// or "kv_cache_sized: KV 23.81 GiB, 646,000 tokens, max concurrency 78.86x at
// 8192 tokens"; with `now_ms` > 0 and phase_since_ms set, ", 1m20s in phase".
std::string StartupLine(const dcufleet::v1::StartupProgress& p, int64_t now_ms = 0);

// The figures a user reads from a log once it is up: "weights 15.27 GiB in
// 70.2 s, KV 23.81 GiB / 646,000 tokens, max concurrency 78.86x at 8192
// tokens, torch.compile 61.5 s"; "" when none.
std::string StartupFigures(const dcufleet::v1::StartupProgress& p);

// {"phase": "compiling", "activity": "graph capture", "failed_in": …,
//  "engine", "engine_version", "platform", "figures": {name: value},
//  "evidence": [{"figure", "line_number", "line"}]} (absent figures left out).
nlohmann::json StartupToJson(const dcufleet::v1::StartupProgress& p);

// PHASE / ENGINE lines, then a FIGURE VALUE LINE table with the line each
// figure came from.
void RenderStartupTable(const dcufleet::v1::StartupProgress& p, std::ostream& out);

}  // namespace dcu::dcuctl
