#pragma once

#include "absl/strings/string_view.h"

namespace dcu::modelkit {

// The shipped rules (deploy/diagnosis/rules.txtpb at build time), for a
// binary run away from the source tree: dcuctl diagnose and dcu-controller
// use them when no rules file is given or found. The name they are parsed
// under in messages is kEmbeddedDiagnosisRulesName.
absl::string_view EmbeddedDiagnosisRulesText();
inline constexpr absl::string_view kEmbeddedDiagnosisRulesName = "built-in rules";

// The shipped learned fallback (deploy/diagnosis/fallback_model.tsv at build
// time, FallbackModel::Parse reads it), embedded the same way.
absl::string_view EmbeddedFallbackModelText();
inline constexpr absl::string_view kEmbeddedFallbackModelName = "built-in fallback model";
inline constexpr absl::string_view kDefaultFallbackModelPath = "deploy/diagnosis/fallback_model.tsv";

}  // namespace dcu::modelkit
