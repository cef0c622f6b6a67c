#pragma once

#include <ostream>
#include <string>

#include "dcuctl/client.h"

namespace dcu::dcuctl {

// dcuctl get events [--for deployment/NAME|node/NAME]: the event log, newest
// last, as LAST SEEN / TYPE / REASON / OBJECT / MESSAGE (FleetService
// ListEvents). `for_object` empty: every object's.
int RunGetEvents(Client& client, const std::string& for_object, std::ostream& out,
                 std::ostream& err);

}  // namespace dcu::dcuctl
