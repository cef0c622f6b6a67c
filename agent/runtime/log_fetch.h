#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/runtime/runtime.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::agent {

// The answer to the controller's FetchLogsCommand, from whichever runtime
// knows the instance: its payload JSON, {"lines": [...]} (at most
// tail_lines, default 200), and with since_offset, where the instance's
// runtime keeps positions, "offset" and "skipped_bytes"
// (FetchLogsCommand.since_offset says what they mean). NOT_FOUND naming the
// node when no runtime knows the instance.
absl::StatusOr<std::string> AnswerFetchLogs(const dcufleet::v1::FetchLogsCommand& command,
                                            const std::map<std::string, Runtime*>& runtimes,
                                            absl::string_view node);

}  // namespace dcu::agent
