#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/catalog_store.h"
#include "dcufleet/v1/catalog.pb.h"

namespace dcu::controller {

// FleetService.ImportCatalog (`dcuctl stack import FILE...`): parses the
// files' texts (evidence may refer to stacks already stored), then imports
// them in one transaction unless dry_run. INVALID_ARGUMENT with
// "FILE:LINE:COLUMN: reason" lines when any file is bad; nothing is written.
absl::StatusOr<dcufleet::v1::ImportCatalogResponse> ImportCatalogRequestInto(
    CatalogStore& store, const dcufleet::v1::ImportCatalogRequest& request, int64_t now_ms);

// Controller start-up: loads every *.txtpb under `dir` into the store.
// NOT_FOUND when the directory is missing; INVALID_ARGUMENT for a bad file.
absl::StatusOr<dcufleet::v1::ImportCatalogResponse> LoadCatalogDirInto(CatalogStore& store,
                                                                       const std::string& dir,
                                                                       int64_t now_ms);

}  // namespace dcu::controller
