#pragma once

#include "absl/strings/string_view.h"

namespace dcu::modelkit {

// The shipped rules (deploy/diagnosis/rules.txtpb at build time), for a
// binary run away from the source tree: dcuctl diagnose and dcu-controller
// use them when no rules file is given or found. The name they are parsed
// under in messages is kEmbeddedDiagnosisRulesName.
absl::string_view EmbeddedDiagnosisRulesText();
inline constexpr absl::string_view kEmbeddedDiagnosisRulesName = "built-in rules";

}  // namespace dcu::modelkit
