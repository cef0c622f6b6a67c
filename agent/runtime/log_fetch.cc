#include "agent/runtime/log_fetch.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/redraw.h"
#include "nlohmann/json.hpp"

namespace dcu::agent {

std::string LatestRedraw(absl::string_view partial) {
  // A bar redraws with '\r' (tqdm, vLLM's loaders).
  partial = common::LastRedraw(partial);
  // A line that never ends (a bar with no newline, a runaway write) is
  // shown by its end, bounded.
  if (partial.size() > common::kMaxLiveLineBytes) {
    partial.remove_prefix(partial.size() - common::kMaxLiveLineBytes);
  }
  return std::string(partial);
}

absl::StatusOr<std::string> AnswerFetchLogs(const dcufleet::v1::FetchLogsCommand& command,
                                            const std::map<std::string, Runtime*>& runtimes,
                                            absl::string_view node) {
  const std::string& id = command.instance_id();
  const int lines = command.tail_lines() > 0 ? command.tail_lines() : 200;
  // ~400 bytes a line: vLLM's longest are its config banner and tracebacks.
  const size_t max_bytes = static_cast<size_t>(lines) * 400;
  std::optional<LogChunk> chunk;
  absl::StatusOr<std::string> text = absl::NotFoundError(
      absl::StrCat("instance '", id, "' is not known on node '", node, "'"));
  for (const auto& [kind, rt] : runtimes) {
    if (command.has_since_offset()) {
      auto c = rt->ReadLogSince(id, command.since_offset(), max_bytes);
      if (c.ok()) {
        chunk = *std::move(c);
        text = chunk->text;
        break;
      }
      // A runtime without positions answers with its tail, as without one.
      if (!absl::IsUnimplemented(c.status())) continue;
    }
    auto t = rt->ReadLogTail(id, max_bytes);
    if (t.ok()) {
      text = std::move(t);
      break;
    }
  }
  if (!text.ok()) return text.status();
  std::vector<std::string> all = absl::StrSplit(*text, '\n');
  if (!all.empty() && all.back().empty()) all.pop_back();
  int64_t dropped_bytes = 0;
  if (all.size() > static_cast<size_t>(lines)) {
    for (auto it = all.begin(); it != all.end() - lines; ++it) dropped_bytes += it->size() + 1;
    all.erase(all.begin(), all.end() - lines);
  }
  nlohmann::json j = {{"lines", all}};
  if (chunk) {
    j["offset"] = chunk->next_offset;
    // A tail (since_offset -1) leaves earlier lines out by design: no skip;
    // -1 (a replaced log) stays as it is.
    int64_t skipped = chunk->skipped_bytes;
    if (command.since_offset() >= 0 && skipped >= 0) skipped += dropped_bytes;
    j["skipped_bytes"] = skipped;
    // The line still being written (a progress bar): its latest redraw, for
    // a follower to show in place. Not a line of the log yet: it comes
    // again, whole, once it ends.
    if (const std::string live = LatestRedraw(chunk->partial); !live.empty()) j["partial"] = live;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace dcu::agent
