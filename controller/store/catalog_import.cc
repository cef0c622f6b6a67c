#include "controller/store/catalog_import.h"

#include "common/status_util.h"
#include "modelkit/catalog_loader.h"

namespace dcu::controller {

using modelkit::CatalogLoadOptions;
using modelkit::LoadCatalogDir;
using modelkit::ParseCatalogTexts;

absl::StatusOr<dcufleet::v1::ImportCatalogResponse> ImportCatalogRequestInto(
    CatalogStore& store, const dcufleet::v1::ImportCatalogRequest& request, int64_t now_ms) {
  if (request.files().empty()) return absl::InvalidArgumentError("no catalog files given");
  CatalogLoadOptions options;
  DCU_ASSIGN_OR_RETURN(std::vector<dcufleet::v1::Stack> stored, store.ListStacks());
  for (const auto& s : stored) options.known_stack_ids.insert(s.id());
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& f : request.files()) texts.emplace_back(f.name(), f.text());
  DCU_ASSIGN_OR_RETURN(dcufleet::v1::CatalogFile catalog, ParseCatalogTexts(texts, options));
  if (request.dry_run()) {
    dcufleet::v1::ImportCatalogResponse resp;
    for (const auto& s : catalog.stack()) resp.add_stacks_unchanged(s.id());
    return resp;
  }
  return store.ImportCatalog(catalog, now_ms);
}

absl::StatusOr<dcufleet::v1::ImportCatalogResponse> LoadCatalogDirInto(CatalogStore& store,
                                                                       const std::string& dir,
                                                                       int64_t now_ms) {
  CatalogLoadOptions options;
  DCU_ASSIGN_OR_RETURN(std::vector<dcufleet::v1::Stack> stored, store.ListStacks());
  for (const auto& s : stored) options.known_stack_ids.insert(s.id());
  DCU_ASSIGN_OR_RETURN(dcufleet::v1::CatalogFile catalog, LoadCatalogDir(dir, options));
  return store.ImportCatalog(catalog, now_ms);
}

}  // namespace dcu::controller
