#pragma once

// dcuctl edit deployment NAME: kubectl edit's loop over apply -f. The
// deployment as `get -o yaml` prints it (`-o json`: as JSON) goes to a temporary file, the
// editor ($DCUCTL_EDITOR, else $EDITOR, else vi) runs on it with the
// terminal, and what is saved is applied as `apply -f` would apply it.
// What cannot be read as a deployment of that name opens in the editor
// again with the reason in '#' lines at the top, as kubectl's edit does,
// until it reads or the editor saves no further change.

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcuctl/client.h"

namespace dcu::dcuctl {

// The editor's argv for `path`: the variable's words (split on spaces, no
// shell: "code --wait" runs code with --wait), then the path.
std::vector<std::string> EditorArgv(const std::string& editor_variable, const std::string& path);

// Lines that begin with '#' blanked (every byte but the newline a space),
// so that what is left reads as YAML or JSON with the same lines and byte
// offsets as the file the editor saved.
std::string BlankCommentLines(const std::string& text);
// The comment block at the top of the file: what the edit is, and why the
// last save was not applied (`problem`, empty on the first opening).
std::string EditHeader(const std::string& problem);

// Exit 0 applied (or nothing changed, or the file was emptied: "Edit
// cancelled"); 2 when what was saved is not a deployment of that name and
// the editor then saved no further change (the file is kept, without the
// comments, and named, to fix and `apply -f`); 1 when the editor fails;
// deploy's codes after.
int RunEdit(Client& client, const std::string& name, std::ostream& out, std::ostream& err);

}  // namespace dcu::dcuctl
