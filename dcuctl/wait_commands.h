#pragma once

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dcuctl/client.h"

namespace dcu::dcuctl {

// dcuctl wait --for=condition=Ready deployment/NAME [--timeout=30s]
// dcuctl wait --for=delete deployment/NAME
// dcuctl wait --for=condition=Ready node/NAME
// A deployment's conditions are its phases (Ready, Unschedulable, Failed,
// ...), a node's its states (Ready, NotReady, Lost), case-insensitive.
// Exit 0 when met, 1 on timeout (naming the phase and message last seen),
// 3 when the object does not exist (--for=condition), 4 when the
// controller cannot be reached, 2 for a bad --for, object or --timeout.
struct WaitArgs {
  std::string for_condition;
  std::string object;
  std::string timeout = "30s";
};
int RunWait(Client& client, const WaitArgs& args, std::ostream& out, std::ostream& err);

// "30s", "2m", "1h30m", "500ms", or a plain number of seconds.
absl::StatusOr<absl::Duration> ParseWaitDuration(const std::string& text);

}  // namespace dcu::dcuctl
