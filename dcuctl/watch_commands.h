#pragma once

// dcuctl get nodes|deployments [NAME] --watch: the table, then one line per
// change (kubectl's -w), until Ctrl-C or SIGTERM (exit 0).
//
// One deployment is followed through its WatchDeployment stream, which the
// controller pushes on every revision. The lists have no stream
// (WatchDeployment is per name, and nodes have none), so they are polled
// once a second from the controller's memory; a node's line is printed when
// its row changes other than its LAST SEEN, a deployment's when its
// revision moves or it goes away. With -o json|yaml|jsonpath|name each
// change prints the changed object in that format.

#include <ostream>
#include <string>

#include "dcuctl/client.h"

namespace dcu::dcuctl {

// Call InstallStopSignals() before (it must precede the channel).
int RunWatchNodes(Client& client, const std::string& name, std::ostream& out, std::ostream& err);
int RunWatchDeployments(Client& client, const std::string& name, std::ostream& out,
                        std::ostream& err);
// get events [--for KIND/NAME] --watch: the table, then each new event as
// it is logged (polled once a second; events are never changed, only
// added, so "new" is an id above the last printed).
int RunWatchEvents(Client& client, const std::string& for_object, std::ostream& out,
                   std::ostream& err);

}  // namespace dcu::dcuctl
