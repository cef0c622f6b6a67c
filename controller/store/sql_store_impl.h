// Definitions of SqlStore<Db> (sql_store.h), included only by the files that
// instantiate it for one database: sqlite_store.cc and pg_store.cc.
#pragma once

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/legacy_fields.h"
#include "common/ids.h"
#include "common/status_util.h"
#include "controller/store/sql_store.h"
#include "migrations/embedded_migrations.h"

namespace dcu::controller {
namespace {

// The SQL here reads the same in both dialects: CASE rather than MAX(a, b)
// (SQLite) or GREATEST(a, b) (PostgreSQL), and a LIMIT that means "all" as
// a number (SQLite takes -1, PostgreSQL NULL or ALL; both the largest int64).
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

template <typename Statement>
NodeRecord ReadNodeRow(const Statement& st) {
  NodeRecord r;
  r.node_id = st.ColumnText(0);
  r.name = st.ColumnText(1);
  r.agent_version = st.ColumnText(2);
  std::string caps = st.ColumnText(3);
  if (!caps.empty()) r.capabilities = absl::StrSplit(caps, ',');
  r.inventory.ParseFromString(st.ColumnBlob(4));
  common::UpgradeLegacyFields(&r.inventory);  // finding severities stored as strings
  r.state = st.ColumnText(5);
  r.state_reason = st.ColumnText(6);
  r.registered_at_ms = st.ColumnInt(7);
  r.last_seen_ms = st.ColumnInt(8);
  // NULL (no cordon) reads as empty; a stored cordon is never empty bytes
  // (since_ms is always set).
  if (std::string cordon = st.ColumnBlob(9); !cordon.empty()) {
    r.cordon.emplace();
    r.cordon->ParseFromString(cordon);
  }
  return r;
}

constexpr char kNodeColumns[] =
    "node_id, name, agent_version, capabilities, inventory, state, state_reason, "
    "registered_at_ms, last_seen_ms, cordon";

}  // namespace

template <typename Db>
absl::StatusOr<std::unique_ptr<SqlStore<Db>>> SqlStore<Db>::Open(const std::string& path) {
  DCU_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path));
  DCU_RETURN_IF_ERROR(db->Migrate(migrations::EmbeddedMigrations(Db::kDialect)));
  return std::make_unique<SqlStore<Db>>(std::shared_ptr<Db>(std::move(db)));
}

namespace sql_store_internal {

// Names looked up per SELECT when a group registers: on PostgreSQL each
// SELECT is a round trip even in a pipelined transaction (its rows are
// read), and a statement per name made a group of 512 Hellos take ~1.2 s
// there (bench/loadgen/connect_storm.sh). A fixed width keeps one prepared
// statement; a short chunk repeats its last name.
constexpr size_t kRegisterLookupWidth = 64;

// The node_id and registered_at_ms of the rows named, for those that exist.
template <typename Db>
absl::Status LookUpNodeIds(Db& db, const std::vector<NodeRecord>& nodes,
                           absl::flat_hash_map<std::string, std::pair<std::string, int64_t>>* found) {
  std::string sql = "SELECT node_id, name, registered_at_ms FROM nodes WHERE name IN (";
  for (size_t k = 0; k < kRegisterLookupWidth; ++k) absl::StrAppend(&sql, k ? ", ?" : "?");
  sql += ")";
  for (size_t start = 0; start < nodes.size(); start += kRegisterLookupWidth) {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(sql));
    for (size_t k = 0; k < kRegisterLookupWidth; ++k) {
      const size_t at = std::min(start + k, nodes.size() - 1);
      q->Bind(static_cast<int>(k + 1), nodes[at].name);
    }
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      (*found)[q->ColumnText(1)] = {q->ColumnText(0), q->ColumnInt(2)};
    }
    DCU_RETURN_IF_ERROR(q->Reset());
  }
  return absl::OkStatus();
}

}  // namespace sql_store_internal

template <typename Db>
absl::StatusOr<std::vector<NodeRecord>> SqlStore<Db>::RegisterNodes(
    const std::vector<NodeRecord>& nodes) {
  std::vector<NodeRecord> out;
  if (nodes.empty()) return out;
  absl::Status s = db_->Transaction([&](Db& db) -> absl::Status {
    out.clear();  // a retried transaction starts over
    out.reserve(nodes.size());
    // The rows that exist keep their node_id and registered_at_ms; a name
    // twice in the group is inserted once, then updated.
    absl::flat_hash_map<std::string, std::pair<std::string, int64_t>> existing;
    DCU_RETURN_IF_ERROR(sql_store_internal::LookUpNodeIds(db, nodes, &existing));
    // Writes return no rows: pipelined on PostgreSQL, one round trip for all.
    DCU_ASSIGN_OR_RETURN(auto upd, db.Prepare(
        "UPDATE nodes SET agent_version = ?, capabilities = ?, inventory = ?, state = ?, "
        "state_reason = ?, last_seen_ms = ?, updated_at_ms = ? WHERE name = ?"));
    DCU_ASSIGN_OR_RETURN(auto ins, db.Prepare(
        "INSERT INTO nodes(node_id, name, agent_version, capabilities, inventory, state, "
        "state_reason, registered_at_ms, last_seen_ms, updated_at_ms) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    for (const NodeRecord& node : nodes) {
      std::string inventory = node.inventory.SerializeAsString();
      std::string caps = absl::StrJoin(node.capabilities, ",");
      NodeRecord stored = node;
      auto it = existing.find(node.name);
      if (it != existing.end()) {
        stored.node_id = it->second.first;
        stored.registered_at_ms = it->second.second;
        upd->Bind(1, node.agent_version).Bind(2, caps).BindBlob(3, inventory).Bind(4, node.state)
            .Bind(5, node.state_reason).Bind(6, node.last_seen_ms).Bind(7, node.last_seen_ms)
            .Bind(8, node.name);
        DCU_RETURN_IF_ERROR(upd->Run());
        DCU_RETURN_IF_ERROR(upd->Reset());
      } else {
        stored.node_id = common::NewId("node");
        ins->Bind(1, stored.node_id).Bind(2, node.name).Bind(3, node.agent_version).Bind(4, caps)
            .BindBlob(5, inventory).Bind(6, node.state).Bind(7, node.state_reason)
            .Bind(8, node.registered_at_ms).Bind(9, node.last_seen_ms).Bind(10, node.last_seen_ms);
        DCU_RETURN_IF_ERROR(ins->Run());
        DCU_RETURN_IF_ERROR(ins->Reset());
        existing[node.name] = {stored.node_id, stored.registered_at_ms};
      }
      out.push_back(std::move(stored));
    }
    return absl::OkStatus();
  });
  DCU_RETURN_IF_ERROR(s);
  return out;
}

template <typename Db>
absl::Status SqlStore<Db>::UpdateInventory(const std::string& name,
                                          const dcufleet::v1::NodeInventory& inventory,
                                          int64_t last_seen_ms) {
  return db_->Write([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto upd, db.Prepare(
        "UPDATE nodes SET inventory = ?1, "
        "last_seen_ms = CASE WHEN last_seen_ms > ?2 THEN last_seen_ms ELSE ?2 END, "
        "updated_at_ms = ?3 WHERE name = ?4 RETURNING node_id"));
    upd->BindBlob(1, inventory.SerializeAsString()).Bind(2, last_seen_ms).Bind(3, last_seen_ms)
        .Bind(4, name);
    DCU_ASSIGN_OR_RETURN(bool row, upd->Step());
    if (!row) return absl::NotFoundError(absl::StrCat("node '", name, "' not found"));
    return upd->Run();
  });
}

template <typename Db>
absl::Status SqlStore<Db>::UpdateNodeStates(const std::vector<StateUpdate>& updates) {
  if (updates.empty()) return absl::OkStatus();
  std::vector<std::string> missing;
  auto write = [&](Db& db) -> absl::Status {
    missing.clear();  // a retried transaction starts over
    DCU_ASSIGN_OR_RETURN(auto upd, db.Prepare(
        "UPDATE nodes SET state = ?1, state_reason = ?2, "
        "last_seen_ms = CASE WHEN last_seen_ms > ?3 THEN last_seen_ms ELSE ?3 END, "
        "updated_at_ms = ?4 WHERE name = ?5 RETURNING node_id"));
    for (const auto& u : updates) {
      upd->Bind(1, u.state).Bind(2, u.reason).Bind(3, u.last_seen_ms).Bind(4, u.last_seen_ms)
          .Bind(5, u.name);
      DCU_ASSIGN_OR_RETURN(bool row, upd->Step());
      if (!row) missing.push_back(u.name);
      DCU_RETURN_IF_ERROR(upd->Reset());
    }
    return absl::OkStatus();
  };
  // One node (a report after silence, the common case): one statement, no
  // BEGIN/COMMIT around it.
  absl::Status s = updates.size() == 1 ? db_->Write(write) : db_->Transaction(write);
  if (!s.ok()) return s;
  if (!missing.empty()) {
    return absl::NotFoundError(absl::StrCat(missing.size() == 1 ? "node" : absl::StrCat(missing.size(), " nodes"),
                                            " not found: '", absl::StrJoin(missing, "', '"), "'"));
  }
  return absl::OkStatus();
}

template <typename Db>
absl::Status SqlStore<Db>::UpdateInventories(
    const std::vector<std::pair<std::string, const dcufleet::v1::NodeInventory*>>& inventories,
    int64_t last_seen_ms) {
  if (inventories.empty()) return absl::OkStatus();
  return db_->Transaction([&](Db& db) -> absl::Status {
    // A node removed meanwhile is skipped (no row to update), not an error.
    DCU_ASSIGN_OR_RETURN(auto upd, db.Prepare(
        "UPDATE nodes SET inventory = ?1, "
        "last_seen_ms = CASE WHEN last_seen_ms > ?2 THEN last_seen_ms ELSE ?2 END, "
        "updated_at_ms = ?3 WHERE name = ?4"));
    for (const auto& [name, inv] : inventories) {
      upd->BindBlob(1, inv->SerializeAsString()).Bind(2, last_seen_ms).Bind(3, last_seen_ms)
          .Bind(4, name);
      DCU_RETURN_IF_ERROR(upd->Run());
      DCU_RETURN_IF_ERROR(upd->Reset());
    }
    return absl::OkStatus();
  });
}

template <typename Db>
absl::Status SqlStore<Db>::DeleteNode(const std::string& name) {
  return db_->Write([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto del, db.Prepare("DELETE FROM nodes WHERE name = ?1 RETURNING node_id"));
    del->Bind(1, name);
    DCU_ASSIGN_OR_RETURN(bool row, del->Step());
    if (!row) return absl::NotFoundError(absl::StrCat("node '", name, "' not found"));
    return del->Run();
  });
}

template <typename Db>
absl::Status SqlStore<Db>::SetNodeCordon(const std::string& name, const dcufleet::v1::NodeCordon* cordon) {
  return db_->Write([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto upd, db.Prepare(cordon != nullptr
                                                  ? "UPDATE nodes SET cordon = ?1 WHERE name = ?2 RETURNING node_id"
                                                  : "UPDATE nodes SET cordon = NULL WHERE name = ?1 RETURNING node_id"));
    if (cordon != nullptr) {
      upd->BindBlob(1, cordon->SerializeAsString()).Bind(2, name);
    } else {
      upd->Bind(1, name);
    }
    DCU_ASSIGN_OR_RETURN(bool row, upd->Step());
    if (!row) return absl::NotFoundError(absl::StrCat("node '", name, "' not found"));
    return upd->Run();
  });
}

template <typename Db>
absl::StatusOr<std::vector<NodeRecord>> SqlStore<Db>::ListNodes() {
  std::vector<NodeRecord> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(absl::StrCat("SELECT ", kNodeColumns,
                                                         " FROM nodes ORDER BY name")));
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      out.push_back(ReadNodeRow(*q));
    }
    return absl::OkStatus();
  }));
  return out;
}

namespace {
constexpr char kInsertEvent[] =
    "INSERT INTO events(at_ms, subject_kind, subject, type, reason, message) "
    "VALUES (?, ?, ?, ?, ?, ?)";
}  // namespace

template <typename Db>
absl::Status SqlStore<Db>::AppendEvent(const Event& e) {
  return db_->Write([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto ins, db.Prepare(kInsertEvent));
    ins->Bind(1, e.at_ms).Bind(2, e.subject_kind).Bind(3, e.subject).Bind(4, e.type)
        .Bind(5, e.reason).Bind(6, e.message);
    return ins->Run();
  });
}

template <typename Db>
absl::Status SqlStore<Db>::AppendEvents(const std::vector<Event>& events) {
  if (events.empty()) return absl::OkStatus();
  return db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto ins, db.Prepare(kInsertEvent));
    for (const auto& e : events) {
      ins->Bind(1, e.at_ms).Bind(2, e.subject_kind).Bind(3, e.subject).Bind(4, e.type)
          .Bind(5, e.reason).Bind(6, e.message);
      DCU_RETURN_IF_ERROR(ins->Run());
      DCU_RETURN_IF_ERROR(ins->Reset());
    }
    return absl::OkStatus();
  });
}

template <typename Db>
absl::StatusOr<std::vector<Event>> SqlStore<Db>::QueryEvents(const EventQuery& query) {
  std::vector<Event> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    // Paging forward reads only what is above the id (the primary key's
    // range); the newest window reads from the top down and turns it over.
    const bool forward = query.after_id > 0;
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(forward
        ? "SELECT event_id, at_ms, subject_kind, subject, type, reason, message FROM events"
          " WHERE event_id > ?4 AND (?1 = '' OR subject_kind = ?1) AND (?2 = '' OR subject = ?2)"
          " ORDER BY event_id LIMIT ?3"
        : "SELECT event_id, at_ms, subject_kind, subject, type, reason, message FROM ("
          " SELECT * FROM events WHERE (?1 = '' OR subject_kind = ?1) AND (?2 = '' OR subject = ?2)"
          " ORDER BY event_id DESC"
          " LIMIT ?3) AS newest ORDER BY event_id"));
    q->Bind(1, query.subject_kind).Bind(2, query.subject)
        .Bind(3, query.limit <= 0 ? kNoLimit : static_cast<int64_t>(query.limit));
    if (forward) q->Bind(4, query.after_id);
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      Event e;
      e.event_id = q->ColumnInt(0);
      e.at_ms = q->ColumnInt(1);
      e.subject_kind = q->ColumnText(2);
      e.subject = q->ColumnText(3);
      e.type = q->ColumnText(4);
      e.reason = q->ColumnText(5);
      e.message = q->ColumnText(6);
      out.push_back(std::move(e));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dcu::controller
