#pragma once

// dcuctl edit deployment NAME: kubectl edit's loop over apply -f. The
// deployment as `get -o yaml` prints it (`-o json`: as JSON) goes to a temporary file, the
// editor ($DCUCTL_EDITOR, else $EDITOR, else vi) runs on it with the
// terminal, and what is saved is applied as `apply -f` would apply it.

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcuctl/client.h"

namespace dcu::dcuctl {

// The editor's argv for `path`: the variable's words (split on spaces, no
// shell: "code --wait" runs code with --wait), then the path.
std::vector<std::string> EditorArgv(const std::string& editor_variable, const std::string& path);

// Exit 0 applied (or nothing changed: "Edit cancelled"); 2 for what was
// saved that is not a deployment of that name (the file is kept and named,
// to fix and `apply -f`); 1 when the editor fails; deploy's codes after.
int RunEdit(Client& client, const std::string& name, std::ostream& out, std::ostream& err);

}  // namespace dcu::dcuctl
