#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::controller {

// Durable facts about one node. Hot per-heartbeat figures live in FleetState.
struct NodeRecord {
  std::string node_id;
  std::string name;
  std::string agent_version;
  std::vector<std::string> capabilities;
  dcufleet::v1::NodeInventory inventory;
  // "Ready", "NotReady", "Lost".
  std::string state;
  std::string state_reason;
  int64_t registered_at_ms = 0;
  int64_t last_seen_ms = 0;
  // A person's cordon or drain (dcuctl cordon / drain); none: schedulable.
  std::optional<dcufleet::v1::NodeCordon> cordon;
};

// Durable node rows. Implementations must be safe to call from any thread.
class NodeStore {
 public:
  virtual ~NodeStore() = default;
  // Registers nodes in one transaction, in order: each is inserted, or
  // updates the existing row with the same name (its node_id and
  // registered_at_ms are kept); a name twice in one call is inserted once,
  // then updated. Returns the stored records in the same order. All or none:
  // an error means no row was written. Hellos are registered in groups
  // (issue 22: a connect storm of 10,000 agents paid one commit per Hello).
  virtual absl::StatusOr<std::vector<NodeRecord>> RegisterNodes(
      const std::vector<NodeRecord>& nodes) = 0;
  // One node: RegisterNodes of one.
  absl::StatusOr<NodeRecord> RegisterNode(const NodeRecord& node) {
    absl::StatusOr<std::vector<NodeRecord>> stored = RegisterNodes({node});
    if (!stored.ok()) return stored.status();
    return std::move(stored->front());
  }
  struct StateUpdate {
    std::string name;
    std::string state;
    std::string reason;
    int64_t last_seen_ms = 0;
  };
  // Records state transitions, several in one transaction (a tick can find
  // thousands of nodes silent at once). A name no node has is skipped, not
  // an error for the others: NOT_FOUND naming it after the rest are stored.
  virtual absl::Status UpdateNodeStates(const std::vector<StateUpdate>& updates) = 0;
  // Stores a newer inventory. NOT_FOUND when no node has that name.
  virtual absl::Status UpdateInventory(const std::string& name,
                                       const dcufleet::v1::NodeInventory& inventory,
                                       int64_t last_seen_ms) = 0;
  // Several inventories in one transaction.
  virtual absl::Status UpdateInventories(
      const std::vector<std::pair<std::string, const dcufleet::v1::NodeInventory*>>& inventories,
      int64_t last_seen_ms) {
    for (const auto& [name, inv] : inventories) {
      absl::Status s = UpdateInventory(name, *inv, last_seen_ms);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  virtual absl::StatusOr<std::vector<NodeRecord>> ListNodes() = 0;
  // Sets (or with nullptr clears) the node's cordon. A Hello's
  // registration and a report's updates leave it as it is. NOT_FOUND when
  // no node has that name.
  virtual absl::Status SetNodeCordon(const std::string& name, const dcufleet::v1::NodeCordon* cordon) = 0;
  // Removes the node's row: the node is forgotten (a Slurm job's node, long
  // after its job ended). NOT_FOUND when no node has that name.
  virtual absl::Status DeleteNode(const std::string& name) = 0;
};

struct Event {
  int64_t event_id = 0;
  int64_t at_ms = 0;
  std::string subject_kind;
  std::string subject;
  // "Normal" or "Warning".
  std::string type;
  std::string reason;
  std::string message;
};

// Which events to read (EventLog::QueryEvents).
struct EventQuery {
  // Empty: every kind; with it, an empty `subject` matches every subject.
  std::string subject_kind;
  std::string subject;
  // <= 0: no limit.
  int limit = 0;
  // 0: the newest `limit` events. > 0: the oldest `limit` events whose id is
  // above it (a watcher paging forward from the last event it has).
  int64_t after_id = 0;
};

// An append-only history of what happened, per subject.
class EventLog {
 public:
  virtual ~EventLog() = default;
  virtual absl::Status AppendEvent(const Event& event) = 0;
  // Several events in one transaction (a reconcile pass's).
  virtual absl::Status AppendEvents(const std::vector<Event>& events) {
    for (const auto& e : events) {
      absl::Status s = AppendEvent(e);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // The events `query` selects, oldest first.
  virtual absl::StatusOr<std::vector<Event>> QueryEvents(const EventQuery& query) = 0;
  // Events for one subject, oldest first; `limit` <= 0 means all (the
  // newest `limit` otherwise). An empty `subject_kind` matches every kind and
  // an empty `subject` every subject (dcuctl get events).
  absl::StatusOr<std::vector<Event>> ListEvents(const std::string& subject_kind,
                                                const std::string& subject, int limit) {
    return QueryEvents(EventQuery{subject_kind, subject, limit, /*after_id=*/0});
  }
};

}  // namespace dcu::controller
