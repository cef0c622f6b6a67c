#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/catalog.pb.h"

namespace dcu::modelkit {

// The field changes that turn `config_text` back into the published config of
// `model` (architectures, model_type, head_dim, num_key_value_heads, an
// invalid torch_dtype). Nested text configs are corrected inside their object
// ("text_config.head_dim"). FAILED_PRECONDITION when the text is not JSON
// (nothing to correct: restore the file) or when hidden size, layers, heads or
// vocabulary differ (a different checkpoint, not a damaged config).
absl::StatusOr<std::vector<dcufleet::v1::ConfigCorrection>> ProposeCorrections(
    absl::string_view config_text, const dcufleet::v1::ModelEntry& model);

struct RemediationOptions {
  // Overlays go in <overlay_root>/<model>-<hash>; must be outside model dirs.
  std::string overlay_root = "/var/lib/dcufleet/overlays";
  // Use an overlay even when the stack accepts --hf-overrides.
  bool prefer_overlay = false;
};

// Decides how to run a model whose config is damaged without touching the
// user's files. Pure: `dir_entries` are the names in `model_dir`.
//  - REMEDIATION_NONE when nothing needs correcting;
//  - REMEDIATION_HF_OVERRIDES when `stack` accepts --hf-overrides and the
//    corrections are top-level scalars other than architectures/model_type
//    (the engine picks the model class before overrides apply);
//  - REMEDIATION_OVERLAY_DIR otherwise: a directory with a symlink to every
//    entry of the model directory except config.json, and a corrected
//    config.json; it works with any engine version.
absl::StatusOr<dcufleet::v1::RemediationPlan> PlanConfigRemediation(
    const std::string& model_dir, const std::vector<std::string>& dir_entries,
    absl::string_view config_text, const dcufleet::v1::ModelEntry& model,
    const dcufleet::v1::Stack* stack, const RemediationOptions& options = {});

// Names in a directory, sorted.
absl::StatusOr<std::vector<std::string>> ListDirEntries(const std::string& dir);

// Creates (or refreshes) the overlay of an OVERLAY_DIR plan: symlinks and the
// corrected config.json (written to a temporary file, then renamed).
// Idempotent. Refuses an overlay inside the model directory, and never
// replaces anything in the overlay that is not a symlink or its config.json.
absl::Status MaterializeOverlay(const dcufleet::v1::RemediationPlan& plan);

}  // namespace dcu::modelkit
