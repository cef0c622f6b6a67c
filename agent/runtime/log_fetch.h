#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/runtime/runtime.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::agent {

// What a terminal would show of `partial` (a line without its '\n' yet):
// the text after its last carriage return that has text after it (a
// progress bar's latest redraw), its last common::kMaxLiveLineBytes at most.
std::string LatestRedraw(absl::string_view partial);

// The answer to the controller's FetchLogsCommand, from whichever runtime
// knows the instance: its payload JSON, {"lines": [...]} (at most
// tail_lines, default 200), and with since_offset, where the instance's
// runtime keeps positions, "offset" and "skipped_bytes"
// (FetchLogsCommand.since_offset says what they mean). NOT_FOUND naming the
// node when no runtime knows the instance. With since_offset, "partial" is
// the line still being written after "lines" (LatestRedraw of the runtime's
// partial), when there is one.
absl::StatusOr<std::string> AnswerFetchLogs(const dcufleet::v1::FetchLogsCommand& command,
                                            const std::map<std::string, Runtime*>& runtimes,
                                            absl::string_view node);

}  // namespace dcu::agent
