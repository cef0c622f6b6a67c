#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/catalog_store.h"
#include "controller/store/pg_db.h"

namespace dcu::controller {

// CatalogStore over one PgDatabase (tables of
// migrations/postgres/0002_catalog.sql): SqliteCatalogStore's twin. Shares
// the connection with PgStore when given its database().
class PgCatalogStore : public CatalogStore {
 public:
  // Connects to `url` (postgres://…) and applies the embedded migrations
  // (PostgreSQL dialect).
  static absl::StatusOr<std::unique_ptr<PgCatalogStore>> Open(const std::string& url);
  explicit PgCatalogStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}

  absl::StatusOr<dcufleet::v1::ImportCatalogResponse> ImportCatalog(
      const dcufleet::v1::CatalogFile& file, int64_t now_ms) override;
  absl::StatusOr<UpsertOutcome> UpsertStack(const dcufleet::v1::Stack& stack,
                                            int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::Stack>> ListStacks() override;
  absl::StatusOr<dcufleet::v1::Stack> GetStack(const std::string& id) override;
  absl::StatusOr<bool> RecordEvidence(const dcufleet::v1::Evidence& evidence) override;
  absl::StatusOr<std::vector<dcufleet::v1::Evidence>> ListEvidence(
      const EvidenceFilter& filter) override;
  absl::StatusOr<UpsertOutcome> UpsertModel(const dcufleet::v1::ModelEntry& model,
                                            int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::ModelEntry>> ListModels() override;
  absl::StatusOr<dcufleet::v1::ModelEntry> GetModel(const std::string& name) override;
  absl::Status ReplaceNodeModelDirectories(
      const std::string& node, const std::vector<dcufleet::v1::NodeModelDirectory>& dirs,
      int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::NodeModelDirectory>> ListNodeModelDirectories(
      const std::string& node) override;
  absl::StatusOr<std::vector<dcufleet::v1::NodeEnvironment>> RecordNodeEnvironments(
      const std::string& node, const std::vector<dcufleet::v1::RuntimeEnvironment>& envs,
      int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::NodeEnvironment>> ListNodeEnvironments(
      const std::string& stack_id) override;

  const std::shared_ptr<PgDatabase>& database() const { return db_; }

 private:
  std::shared_ptr<PgDatabase> db_;
};

}  // namespace dcu::controller
