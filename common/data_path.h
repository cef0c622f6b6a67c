#pragma once

#include <string>
#include <vector>

namespace dcu::common {

// Finds shipped data (catalog, rules): the flag value if given, else the env
// variable, else the first existing of /etc/dcufleet/<rel>, <exe>/../share/
// dcufleet/<rel>, and <exe>/../../deploy/<rel> (a source-tree build). Returns
// "" when nothing exists.
std::string FindDataPath(const std::string& flag_value, const char* env_var,
                         const std::string& relative);

// Directory of the running executable ("" if unknown).
std::string ExecutableDir();

}  // namespace dcu::common
