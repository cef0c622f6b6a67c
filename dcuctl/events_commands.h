#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "dcuctl/client.h"
#include "dcuctl/output.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::dcuctl {

// The ListEvents request for `--for KIND/NAME` (empty: every object's);
// INVALID_ARGUMENT for a reference that is not one.
absl::StatusOr<dcufleet::v1::ListEventsRequest> EventsRequestFor(const std::string& for_object);
// EventsRequestFor, or nullopt after telling `err` why `--for` is refused
// (the caller exits with kExitUsage).
std::optional<dcufleet::v1::ListEventsRequest> EventsRequestOrRefuse(const std::string& for_object,
                                                                     std::ostream& err);
// One event's row, LAST SEEN counted back from `now_ms`.
std::vector<std::string> EventRow(const dcufleet::v1::ObjectEvent& e, int64_t now_ms);
// The table: LAST SEEN / TYPE / REASON / OBJECT / MESSAGE, one row per event.
Table EventsTable(const dcufleet::v1::ListEventsResponse& resp, int64_t now_ms);

// dcuctl get events [--for deployment/NAME|node/NAME]: the event log, newest
// last, as LAST SEEN / TYPE / REASON / OBJECT / MESSAGE (FleetService
// ListEvents). `for_object` empty: every object's.
int RunGetEvents(Client& client, const std::string& for_object, std::ostream& out,
                 std::ostream& err);

}  // namespace dcu::dcuctl
