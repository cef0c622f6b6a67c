#pragma once

// YAML a person gives dcuctl (apply -f, edit), read into the JSON the rest
// of dcuctl reads (JsonToProto). kubectl's manifests are YAML first.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

namespace dcu::dcuctl {

// The documents of `text` ("---" separates several), each as JSON. Plain
// scalars stay strings except true/false (booleans) and null/~ (null):
// protobuf's JSON reading takes "16" for a number field and "1234" stays a
// name, so no scalar's type is guessed. A quoted scalar is always a string.
// INVALID_ARGUMENT naming `where` and the line and column of a syntax
// error, a key given twice, nesting deeper than 64, or more than 200,000
// values (aliases expanded: a "billion laughs" file stops there).
absl::StatusOr<std::vector<nlohmann::json>> YamlDocumentsToJson(const std::string& text,
                                                                const std::string& where);

}  // namespace dcu::dcuctl
