#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/catalog_store.h"

namespace dcu::controller {

// CatalogStore over one database (tables of migrations/0002_catalog.sql and
// migrations/postgres/0002_catalog.sql). Shares the connection with the
// SqlStore when given its database().
// `Db` is SqliteDatabase (sqlite_db.h, the embedded default) or PgDatabase
// (pg_db.h): one set of SQL for both, written to read the same in both
// dialects; reads go through Db::WithConnection, one-statement writes
// through Db::Write, batches through Db::Transaction (on PostgreSQL every
// write is a transaction, so the leader's write fence guards it).
// Instantiated once per database in sqlite_*.cc and pg_*.cc.
template <typename Db>
class SqlCatalogStore : public CatalogStore {
 public:
  // Opens `path` (SQLite: a file, ":memory:" for tests; PostgreSQL: a
  // postgres:// URL) and applies the embedded migrations of its dialect.
  static absl::StatusOr<std::unique_ptr<SqlCatalogStore>> Open(const std::string& path);
  explicit SqlCatalogStore(std::shared_ptr<Db> db) : db_(std::move(db)) {}

  absl::StatusOr<dcufleet::v1::ImportCatalogResponse> ImportCatalog(
      const dcufleet::v1::CatalogFile& file, int64_t now_ms) override;
  absl::StatusOr<UpsertOutcome> UpsertStack(const dcufleet::v1::Stack& stack,
                                            int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::Stack>> ListStacks() override;
  absl::StatusOr<dcufleet::v1::Stack> GetStack(const std::string& id) override;
  absl::StatusOr<bool> RecordEvidence(const dcufleet::v1::Evidence& evidence) override;
  absl::StatusOr<std::vector<bool>> RecordEvidenceBatch(
      const std::vector<dcufleet::v1::Evidence>& evidence) override;
  absl::StatusOr<std::vector<dcufleet::v1::Evidence>> ListEvidence(
      const EvidenceFilter& filter) override;
  absl::StatusOr<std::vector<dcufleet::v1::Evidence>> ListEvidenceRecordedAfter(
      int64_t* after) override;
  absl::StatusOr<UpsertOutcome> UpsertModel(const dcufleet::v1::ModelEntry& model,
                                            int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::ModelEntry>> ListModels() override;
  absl::StatusOr<dcufleet::v1::ModelEntry> GetModel(const std::string& name) override;
  absl::Status ReplaceNodeModelDirectories(
      const std::string& node, const std::vector<dcufleet::v1::NodeModelDirectory>& dirs,
      int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::NodeModelDirectory>> ListNodeModelDirectories(
      const std::string& node) override;
  absl::StatusOr<std::vector<std::vector<dcufleet::v1::NodeEnvironment>>> RecordNodeObservations(
      const std::vector<NodeObservation>& nodes, int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::NodeEnvironment>> RecordNodeEnvironments(
      const std::string& node, const std::vector<dcufleet::v1::RuntimeEnvironment>& envs,
      int64_t now_ms) override;
  absl::StatusOr<std::vector<dcufleet::v1::NodeEnvironment>> ListNodeEnvironments(
      const std::string& stack_id) override;

  const std::shared_ptr<Db>& database() const { return db_; }

 private:
  std::shared_ptr<Db> db_;
};

}  // namespace dcu::controller
