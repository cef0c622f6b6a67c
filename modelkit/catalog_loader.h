#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dcufleet/v1/catalog.pb.h"

namespace dcu::modelkit {

struct CatalogLoadOptions {
  // Stack ids known outside the files being loaded (e.g. already in the
  // store), which evidence rows may reference.
  std::set<std::string> known_stack_ids;
};

// Parses and validates catalog files (protobuf text format, root message
// dcufleet.v1.CatalogFile). All or nothing: when any file has a syntax error
// or a validation error, nothing is returned but INVALID_ARGUMENT whose message
// lists every problem found, one per line, as "FILE:LINE:COLUMN: reason"
// (1-based). Checked: ids (shape, duplicates across all files), arch names,
// argv placeholders, env variable names, absolute paths in recipes, evidence
// references to stacks, model fingerprints. Stacks without an origin get
// "catalog:<name>".
absl::StatusOr<dcufleet::v1::CatalogFile> ParseCatalogTexts(
    const std::vector<std::pair<std::string, std::string>>& named_texts,
    const CatalogLoadOptions& options = {});

// One text; `name` is what messages call it.
absl::StatusOr<dcufleet::v1::CatalogFile> ParseCatalogText(absl::string_view name,
                                                           absl::string_view text,
                                                           const CatalogLoadOptions& options = {});

// Reads and parses files. NOT_FOUND when a file cannot be read.
absl::StatusOr<dcufleet::v1::CatalogFile> LoadCatalogFiles(const std::vector<std::string>& paths,
                                                           const CatalogLoadOptions& options = {});

// Every *.txtpb under `dir` (recursively, in path order). NOT_FOUND when the
// directory does not exist.
absl::StatusOr<dcufleet::v1::CatalogFile> LoadCatalogDir(const std::string& dir,
                                                         const CatalogLoadOptions& options = {});

// The *.txtpb files under `dir`, sorted.
absl::StatusOr<std::vector<std::string>> ListCatalogFiles(const std::string& dir);

}  // namespace dcu::modelkit
