#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/node_store.h"
#include "controller/store/pg_db.h"

namespace dcu::controller {

// NodeStore and EventLog over one PgDatabase: SqliteStore's twin
// (sqlite_store.h); every write is a Transaction, so the write fence applies.
class PgStore : public NodeStore, public EventLog {
 public:
  // Connects to `url` (postgres://…) and applies the embedded migrations
  // (PostgreSQL dialect).
  static absl::StatusOr<std::unique_ptr<PgStore>> Open(const std::string& url);
  explicit PgStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}

  absl::StatusOr<NodeRecord> RegisterNode(const NodeRecord& node) override;
  absl::Status UpdateNodeState(const std::string& name, const std::string& state,
                               const std::string& reason, int64_t last_seen_ms) override;
  absl::Status UpdateInventory(const std::string& name,
                               const dcufleet::v1::NodeInventory& inventory,
                               int64_t last_seen_ms) override;
  absl::Status UpdateInventories(
      const std::vector<std::pair<std::string, const dcufleet::v1::NodeInventory*>>& inventories,
      int64_t last_seen_ms) override;
  absl::StatusOr<std::vector<NodeRecord>> ListNodes() override;

  absl::Status AppendEvent(const Event& event) override;
  absl::Status AppendEvents(const std::vector<Event>& events) override;
  absl::StatusOr<std::vector<Event>> ListEvents(const std::string& subject_kind,
                                                const std::string& subject, int limit) override;

  const std::shared_ptr<PgDatabase>& database() const { return db_; }

 private:
  std::shared_ptr<PgDatabase> db_;
};

}  // namespace dcu::controller
