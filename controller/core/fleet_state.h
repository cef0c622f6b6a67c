#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/core/node_session.h"
#include "controller/store/node_store.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/node.pb.h"

namespace dcu::controller {

// The controller's in-memory picture of the fleet: one entry per node with
// its latest inventory and instance reports. Durable transitions (register,
// state changes) go to the NodeStore; per-heartbeat figures stay in memory and
// are persisted at most once per `inventory_persist_interval` per node.
// Told about fleet changes (the deploy reconciler). Called without FleetState's
// lock held; must not block.
class FleetListener {
 public:
  virtual ~FleetListener() = default;
  virtual void OnNodeConnected(const std::string& node) = 0;
  virtual void OnFleetChanged() = 0;
};

class FleetState {
 public:
  struct Options {
    // No report for this long → NotReady.
    absl::Duration not_ready_after = absl::Seconds(15);
    // No report for this long → Lost (its instances may be rescheduled).
    absl::Duration lost_after = absl::Seconds(60);
    absl::Duration inventory_persist_interval = absl::Seconds(30);
    // Told to agents in Welcome.
    absl::Duration status_interval = absl::Seconds(5);
    // Issue 22: take reports that carry only the inventory's digest (and
    // its moving figures), and say so in Welcome. false behaves as a
    // controller from before: agents send full inventories.
    bool accept_inventory_digest = true;
    // Issue 20: a node inside a batch job (its inventory names the job) is
    // forgotten this long after it went Lost: its row, view and draining
    // mark are removed, so that every ended job does not leave a Lost node
    // behind for good. A job's node name is not used again; an agent that
    // does come back registers anew. Zero or less: never.
    absl::Duration forget_job_nodes_after = absl::Minutes(10);
  };
  // An InventoryRequest is sent to a node at most this often while its
  // reports name a digest the controller does not hold.
  static constexpr absl::Duration kInventoryRequestEvery = absl::Seconds(1);

  FleetState(NodeStore* store, EventLog* events, const common::Clock* clock, Options options);

  // Loads durable node rows; every node starts NotReady until it reconnects.
  absl::Status Load() ABSL_LOCKS_EXCLUDED(mu_);

  // Registers (or re-registers) a node from its Hello. `session` receives the
  // Welcome and later assignments; it replaces any previous session of the
  // same node. Returns the Welcome that was sent.
  absl::StatusOr<dcufleet::v1::Welcome> OnHello(const dcufleet::v1::Hello& hello,
                                                NodeSession* session)
      ABSL_LOCKS_EXCLUDED(mu_, hello_mu_);
  // The same, answered through `done` (with the Welcome, or why the Hello
  // was refused). Registrations are committed in groups (issue 22): a Hello
  // that arrives while another thread commits is queued and this call
  // returns at once; that thread commits it with the next group and calls
  // `done`. So `done` may run on another thread, before or after this
  // returns; it must not call back into OnHello.
  using HelloDone = std::function<void(absl::StatusOr<dcufleet::v1::Welcome>)>;
  void OnHelloAsync(dcufleet::v1::Hello hello, NodeSession* session, HelloDone done)
      ABSL_LOCKS_EXCLUDED(mu_, hello_mu_);
  // The most Hellos one registration transaction takes.
  static constexpr size_t kMaxHellosPerCommit = 512;
  // Records a periodic report. FAILED_PRECONDITION when `session` is not the
  // node's current session (a stale stream).
  // A report with the inventory replaces the node's inventory; one with only
  // its digest (issue 22) applies the moving figures to the inventory held,
  // when the digest is the one that came with it; otherwise the node is
  // sent an InventoryRequest (liveness and instances are taken either way).
  // The report is taken by value: its inventory and instances are moved into
  // the node's view, not copied (a report is ~10 KB and comes every interval
  // from every node). Listeners hear of it only when something the reconciler
  // acts on changed (instances' phases, the node's state).
  absl::Status OnStatus(const std::string& node, dcufleet::v1::NodeStatus status,
                        NodeSession* session) ABSL_LOCKS_EXCLUDED(mu_);
  // Records one instance's phase change.
  absl::Status OnInstanceEvent(const std::string& node, const dcufleet::v1::InstanceEvent& event,
                               NodeSession* session) ABSL_LOCKS_EXCLUDED(mu_);
  // The agent said it is leaving for good (Goodbye: its batch job ends,
  // issue 20): the node is Lost at once, so its replicas are rescheduled
  // now rather than after lost-after. Ignored from a stale session.
  void OnGoodbye(const std::string& node, const std::string& reason, NodeSession* session)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A node pool saw the batch job `job_id` end (node_pool.h): every node
  // whose agent runs inside it (inventory.allocation) is Lost at once, as
  // on a Goodbye that never came (SIGKILL, node failure).
  void OnAllocationEnded(const std::string& job_id, const std::string& reason)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The stream of `session` ended. After this returns the core never touches
  // `session` again.
  void OnDisconnect(const std::string& node, NodeSession* session) ABSL_LOCKS_EXCLUDED(mu_);

  // Applies heartbeat timeouts and persists dirty inventories. Idempotent.
  void Tick() ABSL_LOCKS_EXCLUDED(mu_);

  std::vector<dcufleet::v1::NodeView> ListNodes() const ABSL_LOCKS_EXCLUDED(mu_);
  // The fleet in name order, without copying: views are immutable once
  // published (a change publishes a new one), so a reader may keep them.
  std::vector<std::shared_ptr<const dcufleet::v1::NodeView>> Snapshot() const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same with each view's revision: a number, unique across the fleet,
  // that changes whenever the node's view changes in something a reader
  // acts on (also when it is changed in place): its state, drain,
  // instances (beyond their timestamps), a full inventory, a memory
  // figure's value. Not when a report only refreshes times (last_seen_ms,
  // read times, collected_at_ms, processes_scanned, probe_log): at 10,000
  // agents x 1/s that is nearly every report, and a reconcile pass would
  // rebuild every node's summary each second for nothing. A cache keyed by
  // revision takes the view itself from the snapshot (a report may have
  // replaced the object without a new revision).
  struct VersionedView {
    std::shared_ptr<const dcufleet::v1::NodeView> view;
    uint64_t revision = 0;
  };
  std::vector<VersionedView> SnapshotVersioned() const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<dcufleet::v1::NodeView> GetNode(const std::string& name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Issue 20: the nodes that drain (their agents' reports carry NodeDrain)
  // and are not Lost, in name order. Few or none: a reconcile pass asks
  // every time.
  std::vector<std::string> DrainingNodes() const ABSL_LOCKS_EXCLUDED(mu_);
  // A person's cordon (dcuctl cordon, drain) or, with nullopt, its end
  // (uncordon): stored first, then shown in the node's view (NodeView.cordon),
  // which the scheduler reads; a drain's node is among DrainingNodes, so its
  // replicas are moved as an agent's drain moves them. A Hello or a report
  // keeps it. NOT_FOUND for a node the controller does not know. Returns the
  // node's view.
  absl::StatusOr<dcufleet::v1::NodeView> SetCordon(const std::string& node,
                                                   std::optional<dcufleet::v1::NodeCordon> cordon)
      ABSL_LOCKS_EXCLUDED(mu_, cordon_mu_);
  // The longest drain reason kept from a report (a node is not trusted to
  // say much; docs/security.md).
  static constexpr size_t kMaxDrainReason = 256;

  // Sends `message` (a command; an Assignment goes through SendAssignment,
  // which records what the node runs) to the node's current session. False
  // when not connected.
  bool SendToNode(const std::string& node, dcufleet::v1::ControllerMessage message)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sends an Assignment encoded ahead (assignment_wire.h: it is not readable
  // from `message` in memory); `instance_ids` are the instances it lists,
  // the ones the node's events may speak of.
  bool SendAssignment(const std::string& node, std::vector<std::string> instance_ids,
                      dcufleet::v1::ControllerMessage message) ABSL_LOCKS_EXCLUDED(mu_);

  // Sends a one-shot command and waits for the agent's CommandResult.
  // UNAVAILABLE when the node is not connected, DEADLINE_EXCEEDED on timeout.
  absl::StatusOr<dcufleet::v1::CommandResult> RunCommand(const std::string& node,
                                                         dcufleet::v1::Command command,
                                                         absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);
  // An agent's answer to a command. Only the node the command was sent to
  // may answer it: another node's answer is refused (PERMISSION_DENIED, the
  // stream ends) and the command still waits for its own node. An answer to
  // a command no longer waited for (it timed out) is dropped.
  absl::Status OnCommandResult(const std::string& node, const dcufleet::v1::CommandResult& result)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The edge refused a message of `node` (its stream ends): counted.
  void OnRefused(const std::string& node, const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  static constexpr double kInstanceEventsPerSecond = 50;
  static constexpr double kInstanceEventBurst = 200;
  // A node that keeps sending far past its budget (over twice the rate, until
  // another burst's worth is dropped) is disconnected, and its Hello refused for this long:
  // dropping is cheap, but reading a flood still costs the controller a core.
  static constexpr absl::Duration kFloodPenalty = absl::Seconds(5);

  void SetListener(FleetListener* listener) { listener_ = listener; }
  const Options& options() const { return options_; }

 private:
  // The one path to a node's session: `assigned_ids` (an Assignment's
  // instances) replaces what the node's events may speak of.
  bool Send(const std::string& node, std::optional<std::vector<std::string>> assigned_ids,
            dcufleet::v1::ControllerMessage message) ABSL_LOCKS_EXCLUDED(mu_);
  struct NodeEntry {
    // FleetState::VersionedView::revision; bumped by MutableView and
    // PublishLocked (unless the new view differs in times only) and by an
    // in-place delta that moves a figure or the instances.
    uint64_t revision = 0;
    // Copy-on-write: never changed while shared with a Snapshot() reader.
    std::shared_ptr<const dcufleet::v1::NodeView> view =
        std::make_shared<const dcufleet::v1::NodeView>();
    absl::Time last_seen;
    absl::Time inventory_persisted;
    bool inventory_dirty = false;
    NodeSession* session = nullptr;
    // Instance ids of the last assignment sent: with the ids the node
    // reported, the instances it may send events about.
    absl::flat_hash_set<std::string> assigned;
    // Token bucket for instance events (kInstanceEventsPerSecond, burst
    // kInstanceEventBurst): a phase change is a handful of events, a flood is
    // not a node's.
    double event_tokens = kInstanceEventBurst;
    absl::Time tokens_at;
    // Recent drops, drained at kInstanceEventsPerSecond; past a burst's
    // worth the node is flooding (sending over twice its budget).
    double event_excess = 0;
    // Disconnected for flooding: Hello is refused until then.
    absl::Time flood_until;
    dcufleet::v1::NodeDrops drops;
    // Digest of the inventory held (the one its agent sent with it); 0:
    // none known, a digest-only report gets an InventoryRequest.
    uint64_t inventory_digest = 0;
    absl::Time inventory_requested;
    // The latest report that refreshed times only (no figure, instance,
    // drain or state change; see SnapshotVersioned) and came while a reader
    // held the view. Copying the held view for each such report, and
    // freeing the copy later, was ~15% of the controller's CPU during a
    // failover at 10,000 agents x 1/s (perf). Applied before the next
    // change to the view (MutableView), or in place by Tick once nobody
    // holds it, and to the copies GetNode and ListNodes return; a newer
    // report supersedes it. Until then a Snapshot() reader sees the
    // previous report's times.
    std::optional<dcufleet::v1::NodeStatus> times_only;
    absl::Time times_only_at;
    dcufleet::v1::NodeReports reports;
    // Bytes the last arena-held view took: the next one's first block.
    size_t view_arena_bytes = 0;
    // Drops since the last log line about them (logged at most every 10 s).
    int64_t unlogged_drops = 0;
    absl::Time drops_logged;
    // When it went Lost (for a node loaded Lost: the controller's start).
    absl::Time lost_at = absl::InfinitePast();
  };
  // Which NodeDrops counter a drop counts in.
  enum class Drop { kRateLimited, kUnknownInstance, kRefused };
  void CountDropLocked(NodeEntry& e, const std::string& node, Drop drop, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The entry of `node` when `session` is the stream it is connected on
  // (a report or event from a replaced stream must not touch it); else
  // FailedPrecondition naming the node.
  absl::StatusOr<NodeEntry*> ConnectedEntryLocked(const std::string& node, const NodeSession* session)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The entry's view, writable: in place when no reader holds it, else a copy
  // that replaces it.
  dcufleet::v1::NodeView* MutableView(NodeEntry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replaces the entry's view with `v`; a new revision unless
  // `keep_revision` (it differs from the old view in refreshed times only).
  void PublishLocked(NodeEntry& e, std::shared_ptr<const dcufleet::v1::NodeView> v, bool keep_revision = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A report that refreshes times only, kept as NodeEntry::times_only when a
  // reader holds the view; false (nothing kept) when it changes more.
  bool DeferTimesOnlyLocked(const std::string& node, NodeEntry& e, dcufleet::v1::NodeStatus& status,
                            absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies `e.times_only` to `view` (the entry's own, or a copy of it).
  static void ApplyTimesOnly(const NodeEntry& e, dcufleet::v1::NodeView* view);
  // A digest-only report of the inventory held, applied to the view in
  // place when no reader holds it; false (nothing changed) otherwise.
  bool ApplyDeltaInPlaceLocked(const std::string& node, NodeEntry& e, dcufleet::v1::NodeStatus& status,
                               absl::Time now, std::vector<Event>* events, bool* changed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `*applied`: the event changed the node's view (a dropped one does not,
  // and wakes no reconcile pass: a node could otherwise keep the reconciler
  // busy at its event budget with events about instances it does not run).
  absl::Status OnInstanceEventLocked(const std::string& node,
                                     const dcufleet::v1::InstanceEvent& event,
                                     NodeSession* session, bool* applied) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the drain a Hello or report carries (nullptr: none) into `view`,
  // with an event when it begins or ends. True when that changed.
  bool TakeDrainLocked(const std::string& node, const dcufleet::v1::NodeDrain* reported,
                       dcufleet::v1::NodeView* view, std::vector<Event>* events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetStateLocked(NodeEntry& entry, dcufleet::v1::NodeState state, const std::string& reason,
                      std::vector<Event>* events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushEvents(const std::vector<Event>& events) ABSL_LOCKS_EXCLUDED(mu_);

  struct PendingHello {
    dcufleet::v1::Hello hello;
    NodeSession* session = nullptr;
    HelloDone done;
  };
  // Registers a group of Hellos: one store transaction, then the views
  // (each Hello's inventory and instances are moved into its view), the
  // Welcomes, events and answers.
  void RegisterHellos(std::vector<PendingHello>& batch) ABSL_LOCKS_EXCLUDED(mu_, hello_mu_);

  NodeStore* const store_;
  EventLog* const events_;
  const common::Clock* const clock_;
  const Options options_;

  FleetListener* listener_ = nullptr;
  // One SetCordon at a time, its store write and its view change together:
  // two people's cordons land in the store and the view in one order.
  absl::Mutex cordon_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, NodeEntry> nodes_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> draining_ ABSL_GUARDED_BY(mu_);
  // Nodes a person drains (NodeView.cordon.drain), Lost or not.
  std::set<std::string> drained_by_cordon_ ABSL_GUARDED_BY(mu_);
  // The last revision given to a view (NodeEntry::revision).
  uint64_t last_revision_ ABSL_GUARDED_BY(mu_) = 0;
  // Hellos waiting for the next registration commit, and whether a thread
  // is committing (it takes them; see OnHelloAsync). Never held with mu_.
  absl::Mutex hello_mu_;
  std::deque<PendingHello> pending_hellos_ ABSL_GUARDED_BY(hello_mu_);
  bool registering_ ABSL_GUARDED_BY(hello_mu_) = false;
  // A command waiting for its answer: the node it was sent to, and the
  // answer once that node gave it (OnCommandResult).
  struct PendingCommand {
    std::string node;
    std::optional<dcufleet::v1::CommandResult> result;
  };
  // By command id. Ids are NewId's 48 random bits from a generator that is
  // not cryptographic: a node that has seen enough ids could guess another
  // node's, so the answer is also checked against the node.
  std::map<std::string, PendingCommand> pending_commands_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::controller
