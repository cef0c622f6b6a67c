#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/node_store.h"

namespace dcu::controller {

// NodeStore and EventLog over one database.
// `Db` is SqliteDatabase (sqlite_db.h, the embedded default) or PgDatabase
// (pg_db.h): one set of SQL for both, written to read the same in both
// dialects; reads go through Db::WithConnection, one-statement writes
// through Db::Write, batches through Db::Transaction (on PostgreSQL every
// write is a transaction, so the leader's write fence guards it).
// Instantiated once per database in sqlite_*.cc and pg_*.cc.
template <typename Db>
class SqlStore : public NodeStore, public EventLog {
 public:
  // Opens `path` (SQLite: a file, ":memory:" for tests; PostgreSQL: a
  // postgres:// URL) and applies the embedded migrations of its dialect.
  static absl::StatusOr<std::unique_ptr<SqlStore>> Open(const std::string& path);
  explicit SqlStore(std::shared_ptr<Db> db) : db_(std::move(db)) {}

  absl::StatusOr<std::vector<NodeRecord>> RegisterNodes(
      const std::vector<NodeRecord>& nodes) override;
  absl::Status UpdateInventory(const std::string& name,
                               const dcufleet::v1::NodeInventory& inventory,
                               int64_t last_seen_ms) override;
  absl::Status UpdateNodeStates(const std::vector<StateUpdate>& updates) override;
  absl::Status UpdateInventories(
      const std::vector<std::pair<std::string, const dcufleet::v1::NodeInventory*>>& inventories,
      int64_t last_seen_ms) override;
  absl::StatusOr<std::vector<NodeRecord>> ListNodes() override;
  absl::Status SetNodeCordon(const std::string& name, const dcufleet::v1::NodeCordon* cordon) override;
  absl::Status DeleteNode(const std::string& name) override;

  absl::Status AppendEvent(const Event& event) override;
  absl::Status AppendEvents(const std::vector<Event>& events) override;
  absl::StatusOr<std::vector<Event>> QueryEvents(const EventQuery& query) override;

  const std::shared_ptr<Db>& database() const { return db_; }

 private:
  std::shared_ptr<Db> db_;
};

}  // namespace dcu::controller
