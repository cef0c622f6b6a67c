#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dcu::modelkit {

// Placeholders a launch argv template may use, e.g. "{model_path}".
//   model_path, port, tp, served_name, max_model_len, max_num_seqs,
//   gpu_memory_utilization, dtype, host, python, kv_cache_memory_bytes
const std::vector<std::string>& KnownArgvPlaceholders();

// The placeholder names used in one argument, in order. INVALID_ARGUMENT for
// an unbalanced brace, an empty name, or a name that is not known.
absl::StatusOr<std::vector<std::string>> ArgvPlaceholders(absl::string_view arg);

// Substitutes every placeholder. INVALID_ARGUMENT (naming the argument index
// and placeholder) when a value is missing. Never touches a shell: the result
// is the argv itself.
absl::StatusOr<std::vector<std::string>> RenderArgv(
    const std::vector<std::string>& argv_template,
    const std::map<std::string, std::string>& values);

}  // namespace dcu::modelkit
