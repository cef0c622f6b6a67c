#include "controller/core/fleet_state.h"

#include "modelkit/startup_progress.h"

#include <google/protobuf/arena.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/enum_names.h"
#include "common/ids.h"
#include "common/inventory_delta.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/units.h"
#include "common/version.h"

namespace dcu::controller {

using dcufleet::v1::NodeState;

namespace {
NodeState ParseNodeState(const std::string& s) {
  if (s == "Ready") return dcufleet::v1::NODE_READY;
  if (s == "Lost") return dcufleet::v1::NODE_LOST;
  return dcufleet::v1::NODE_NOT_READY;
}
}  // namespace

FleetState::FleetState(NodeStore* store, EventLog* events, const common::Clock* clock,
                       Options options)
    : store_(store), events_(events), clock_(clock), options_(options) {}

absl::Status FleetState::Load() {
  auto rows = store_->ListNodes();
  if (!rows.ok()) return rows.status();
  absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  for (const NodeRecord& r : *rows) {
    NodeEntry& e = nodes_[r.name];
    auto v = std::make_shared<dcufleet::v1::NodeView>();
    v->set_node_id(r.node_id);
    v->set_name(r.name);
    v->set_agent_version(r.agent_version);
    for (const auto& c : r.capabilities) v->add_capabilities(c);
    *v->mutable_inventory() = r.inventory;
    v->set_registered_at_ms(r.registered_at_ms);
    v->set_last_seen_ms(r.last_seen_ms);
    if (r.cordon) {
      *v->mutable_cordon() = *r.cordon;
      if (r.cordon->drain()) drained_by_cordon_.insert(r.name);
    }
    // Until the agent reconnects we know nothing current about the node. A
    // node that was already Lost stays Lost.
    NodeState stored = ParseNodeState(r.state);
    v->set_state(stored == dcufleet::v1::NODE_LOST ? stored : dcufleet::v1::NODE_NOT_READY);
    v->set_state_reason(stored == dcufleet::v1::NODE_LOST ? r.state_reason
                                                           : "controller restarted; waiting "
                                                             "for the agent to reconnect");
    PublishLocked(e, std::move(v));
    if (stored == dcufleet::v1::NODE_LOST) e.lost_at = now;
    // Grace counts from the restart, not from before it: agents need time to
    // notice and reconnect.
    e.last_seen = now;
    e.inventory_persisted = now;
  }
  return absl::OkStatus();
}

absl::StatusOr<dcufleet::v1::Welcome> FleetState::OnHello(const dcufleet::v1::Hello& hello,
                                                          NodeSession* session) {
  absl::Notification registered;
  absl::StatusOr<dcufleet::v1::Welcome> result;
  OnHelloAsync(hello, session, [&](absl::StatusOr<dcufleet::v1::Welcome> welcome) {
    result = std::move(welcome);
    registered.Notify();
  });
  registered.WaitForNotification();
  return result;
}

void FleetState::OnHelloAsync(dcufleet::v1::Hello hello, NodeSession* session, HelloDone done) {
  absl::Time now = clock_->Now();
  absl::Status refused;
  {
    // Before the store is touched: a flooding node reconnecting at once must
    // not cost a write per attempt.
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(hello.node_name());
    if (it != nodes_.end() && now < it->second.flood_until) {
      refused = absl::ResourceExhaustedError(absl::StrCat(
          "node '", hello.node_name(), "' was disconnected for sending instance events beyond ",
          kInstanceEventsPerSecond, "/s; it may reconnect in ",
          common::HumanDuration(absl::ToInt64Milliseconds(it->second.flood_until - now))));
    }
  }
  if (!refused.ok()) {
    done(std::move(refused));
    return;
  }
  {
    absl::MutexLock lock(&hello_mu_);
    pending_hellos_.push_back(PendingHello{std::move(hello), session, std::move(done)});
    // Whoever is registering takes this one into its next commit: this
    // thread goes back to its pool at once.
    if (registering_) return;
    registering_ = true;
  }
  // This thread registers until no Hello waits (group commit): the Hellos
  // that arrive while one commit runs go into the next.
  while (true) {
    std::vector<PendingHello> batch;
    {
      absl::MutexLock lock(&hello_mu_);
      if (pending_hellos_.empty()) {
        registering_ = false;
        return;
      }
      const size_t n = std::min(pending_hellos_.size(), kMaxHellosPerCommit);
      batch.reserve(n);
      for (size_t k = 0; k < n; ++k) {
        batch.push_back(std::move(pending_hellos_.front()));
        pending_hellos_.pop_front();
      }
    }
    RegisterHellos(batch);
  }
}

void FleetState::RegisterHellos(std::vector<PendingHello>& batch) {
  absl::Time now = clock_->Now();
  int64_t now_ms = common::ToUnixMillis(now);
  std::vector<NodeRecord> records;
  records.reserve(batch.size());
  for (const PendingHello& p : batch) {
    const dcufleet::v1::Hello& hello = p.hello;
    NodeRecord rec;
    rec.name = hello.node_name();
    rec.agent_version = hello.agent_version();
    rec.capabilities.assign(hello.capabilities().begin(), hello.capabilities().end());
    rec.inventory = hello.inventory();
    rec.state = "Ready";
    rec.state_reason = "agent connected";
    rec.registered_at_ms = now_ms;
    rec.last_seen_ms = now_ms;
    records.push_back(std::move(rec));
  }
  // Durable first: a node the controller acknowledged must survive a crash.
  // One transaction for the whole batch.
  const absl::Time commit_start = absl::Now();
  absl::StatusOr<std::vector<NodeRecord>> stored = store_->RegisterNodes(records);
  DCU_LOG_DEBUG("registered ", batch.size(), " node(s) in one commit (",
                absl::FormatDuration(absl::Now() - commit_start), ")");
  if (!stored.ok()) {
    for (PendingHello& p : batch) p.done(stored.status());
    return;
  }

  std::vector<dcufleet::v1::Welcome> welcomes(batch.size());
  std::vector<bool> known(batch.size(), false);
  std::vector<int> devices(batch.size());
  std::vector<Event> events;
  {
    absl::MutexLock lock(&mu_);
    for (size_t k = 0; k < batch.size(); ++k) {
      // The Hello is ours: its inventory and instances move into the view.
      dcufleet::v1::Hello& hello = batch[k].hello;
      NodeSession* session = batch[k].session;
      devices[k] = hello.inventory().devices_size();
      const NodeRecord& row = (*stored)[k];
      dcufleet::v1::Welcome& welcome = welcomes[k];
      welcome.set_controller_version(common::kVersion);
      welcome.set_status_interval_ms(
          static_cast<int32_t>(absl::ToInt64Milliseconds(options_.status_interval)));
      welcome.set_node_id(row.node_id);
      welcome.set_accepts_inventory_digest(options_.accept_inventory_digest);
      welcome.set_accepts_compact_figures(options_.accept_inventory_digest);

      auto [it, inserted] = nodes_.try_emplace(hello.node_name());
      known[k] = !inserted;
      NodeEntry& e = it->second;
      auto v = std::make_shared<dcufleet::v1::NodeView>();
      v->set_node_id(row.node_id);
      v->set_name(hello.node_name());
      v->set_agent_version(hello.agent_version());
      for (const auto& c : hello.capabilities()) v->add_capabilities(c);
      *v->mutable_inventory() = std::move(*hello.mutable_inventory());
      *v->mutable_instances() = std::move(*hello.mutable_instances());
      v->set_registered_at_ms(row.registered_at_ms);
      v->set_address(!hello.advertise_address().empty()
                         ? hello.advertise_address()
                         : std::string(common::HostOfGrpcPeer(session ? session->Peer() : "")));
      v->set_last_seen_ms(now_ms);
      v->set_connected_since_ms(now_ms);
      v->set_state(dcufleet::v1::NODE_READY);
      v->set_state_reason("agent connected");
      TakeDrainLocked(hello.node_name(), hello.has_drain() ? &hello.drain() : nullptr, v.get(),
                      &events);
      // A person's cordon outlives the agent's sessions.
      if (!inserted && e.view->has_cordon()) *v->mutable_cordon() = e.view->cordon();
      PublishLocked(e, std::move(v));
      e.last_seen = now;
      e.inventory_persisted = now;
      e.inventory_dirty = false;
      e.session = session;
      e.inventory_digest = options_.accept_inventory_digest ? hello.inventory_digest() : 0;
      e.inventory_requested = absl::Time();
      e.reports.set_full(e.reports.full() + 1);
      events.push_back(Event{0, now_ms, "node", hello.node_name(), "Normal",
                             known[k] ? "Reconnected" : "Registered",
                             absl::StrCat("agent ", hello.agent_version(), " from ",
                                          session ? session->Peer() : "?", " with ",
                                          devices[k], " devices")});
      dcufleet::v1::ControllerMessage msg;
      *msg.mutable_welcome() = welcome;
      if (session) session->Send(msg);
    }
  }
  FlushEvents(events);
  std::vector<std::string> lines;
  lines.reserve(batch.size());
  for (size_t k = 0; k < batch.size(); ++k) {
    lines.push_back(absl::StrCat("node '", batch[k].hello.node_name(), "' ",
                                 known[k] ? "reconnected" : "registered", " (", devices[k],
                                 " devices)"));
  }
  common::LogLines(common::LogLevel::kInfo, lines);
  for (size_t k = 0; k < batch.size(); ++k) {
    if (listener_) listener_->OnNodeConnected(batch[k].hello.node_name());
    batch[k].done(std::move(welcomes[k]));
  }
}

namespace {

// Whether the instances differ in anything the reconciler acts on (not the
// timestamps every report refreshes).
bool InstancesDiffer(const google::protobuf::RepeatedPtrField<dcufleet::v1::InstanceStatus>& a,
                     const google::protobuf::RepeatedPtrField<dcufleet::v1::InstanceStatus>& b) {
  if (a.size() != b.size()) return true;
  for (int i = 0; i < a.size(); ++i) {
    const auto& x = a[i];
    const auto& y = b[i];
    if (x.instance_id() != y.instance_id() || x.phase() != y.phase() ||
        x.shards_loaded() != y.shards_loaded() || x.shards_total() != y.shards_total() ||
        x.message() != y.message() || x.exit_code() != y.exit_code() || x.port() != y.port() ||
        x.log_tail_size() != y.log_tail_size() ||
        modelkit::StartupReportDiffers(x.startup(), y.startup())) {
      return true;
    }
  }
  return false;
}

}  // namespace

void FleetState::PublishLocked(NodeEntry& e, std::shared_ptr<const dcufleet::v1::NodeView> v, bool keep_revision) {
  e.view = std::move(v);
  // What replaces the view is newer than a deferred report (a newer report,
  // a Hello) or does not carry figures at all (a restart's stored view).
  e.times_only.reset();
  if (!keep_revision) e.revision = ++last_revision_;
}

dcufleet::v1::NodeView* FleetState::MutableView(NodeEntry& e) {
  e.revision = ++last_revision_;
  if (e.view.use_count() != 1) e.view = std::make_shared<const dcufleet::v1::NodeView>(*e.view);
  // Sole owner (under mu_, so no reader can take it meanwhile).
  auto* v = const_cast<dcufleet::v1::NodeView*>(e.view.get());
  // A deferred report is older than the change the caller makes (an
  // instance event's phase): applied first.
  if (e.times_only) {
    ApplyTimesOnly(e, v);
    e.times_only.reset();
    e.inventory_dirty = true;
  }
  return v;
}

void FleetState::ApplyTimesOnly(const NodeEntry& e, dcufleet::v1::NodeView* view) {
  // Checked when it was deferred, against the same inventory (any other
  // change to it publishes a new view, which drops the deferred report).
  (void)common::ApplyMovingFigures(*e.times_only, view->mutable_inventory());
  *view->mutable_instances() = e.times_only->instances();
  view->set_last_seen_ms(common::ToUnixMillis(e.times_only_at));
}

bool FleetState::DeferTimesOnlyLocked(const std::string& node, NodeEntry& e, dcufleet::v1::NodeStatus& status,
                                      absl::Time now) {
  const dcufleet::v1::NodeView& v = *e.view;
  if (status.inventory_digest() != e.inventory_digest || v.state() != dcufleet::v1::NODE_READY) return false;
  // A drain, reported or ended, goes the long way (rare, and it changes the view).
  if (status.has_drain() || v.has_drain() || draining_.contains(node)) return false;
  if (InstancesDiffer(v.instances(), status.instances())) return false;
  absl::StatusOr<bool> moves = common::MovingFiguresMove(status, v.inventory());
  if (!moves.ok() || *moves) return false;
  e.times_only = std::move(status);
  e.times_only_at = now;
  e.last_seen = now;
  e.reports.set_delta(e.reports.delta() + 1);
  return true;
}

namespace {

// A view whose messages live on one arena, owned with it: copying a held
// inventory into it is a few block allocations instead of ~150 (issue 22:
// a digest-only report copies the inventory it does not carry).
std::shared_ptr<dcufleet::v1::NodeView> NewArenaView(size_t first_block) {
  google::protobuf::ArenaOptions o;
  o.start_block_size = std::clamp<size_t>(first_block, 4096, 256 << 10);
  o.max_block_size = std::max<size_t>(o.start_block_size, 64 << 10);
  auto arena = std::make_shared<google::protobuf::Arena>(o);
  auto* view = google::protobuf::Arena::CreateMessage<dcufleet::v1::NodeView>(arena.get());
  return std::shared_ptr<dcufleet::v1::NodeView>(arena, view);
}

}  // namespace

bool FleetState::ApplyDeltaInPlaceLocked(const std::string& node, NodeEntry& e, dcufleet::v1::NodeStatus& status,
                                         absl::Time now, std::vector<Event>* events, bool* changed) {
  // The common report (issue 22): the inventory the controller holds, with
  // new moving figures, while no reader holds the view: changed in place
  // (a new revision, so the reconciler's cache sees it). Copying the held
  // inventory into a new view for every report was 17-22% of the
  // controller's CPU at 10,000 agents x 1/s (perf). ApplyMovingFigures
  // checks before it writes, so a refused report leaves the view as it was
  // and the copying path answers it.
  if (status.inventory_digest() != e.inventory_digest || e.view.use_count() != 1) return false;
  // A view on an arena keeps what in-place changes replace (instances
  // swapped in are copied onto it): once it holds twice what it was built
  // with, the copying path builds a fresh one, so memory stays bounded.
  if (const auto* arena = e.view->GetArena();
      arena != nullptr && arena->SpaceAllocated() > 2 * std::max<uint64_t>(e.view_arena_bytes, 4096)) {
    return false;
  }
  dcufleet::v1::NodeView* v = const_cast<dcufleet::v1::NodeView*>(e.view.get());  // sole owner, under mu_
  bool moved = false;
  if (!common::ApplyMovingFigures(status, v->mutable_inventory(), &moved).ok()) return false;
  e.inventory_dirty = true;
  e.reports.set_delta(e.reports.delta() + 1);
  const bool drain_changed = TakeDrainLocked(node, status.has_drain() ? &status.drain() : nullptr, v, events);
  const bool instances_changed = InstancesDiffer(v->instances(), status.instances());
  if (drain_changed || instances_changed) *changed = true;
  // A new revision only for what a reader acts on (SnapshotVersioned).
  if (moved || drain_changed || instances_changed) e.revision = ++last_revision_;
  e.times_only.reset();  // this report is newer
  v->mutable_instances()->Swap(status.mutable_instances());
  e.last_seen = now;
  v->set_last_seen_ms(common::ToUnixMillis(now));
  if (v->state() != dcufleet::v1::NODE_READY) SetStateLocked(e, dcufleet::v1::NODE_READY, "reporting again", events);
  return true;
}

absl::StatusOr<FleetState::NodeEntry*> FleetState::ConnectedEntryLocked(const std::string& node,
                                                                        const NodeSession* session) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.session != session) {
    return absl::FailedPreconditionError(
        absl::StrCat("node '", node, "' is not connected on this stream"));
  }
  return &it->second;
}

absl::Status FleetState::OnStatus(const std::string& node, dcufleet::v1::NodeStatus status,
                                  NodeSession* session) {
  absl::Time now = clock_->Now();
  std::vector<Event> events;
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<NodeEntry*> entry = ConnectedEntryLocked(node, session);
    if (!entry.ok()) return entry.status();
    NodeEntry& e = **entry;
    const bool full = status.has_inventory();
    const bool delta = !full && options_.accept_inventory_digest && status.inventory_digest() != 0;
    if (!(delta && (ApplyDeltaInPlaceLocked(node, e, status, now, &events, &changed) ||
                    DeferTimesOnlyLocked(node, e, status, now)))) {
      const dcufleet::v1::NodeView& old = *e.view;
      // Without the inventory the report's view copies the held one: onto an
      // arena. With it, the report's inventory is moved in (same heap).
      std::shared_ptr<dcufleet::v1::NodeView> v =
          full ? std::make_shared<dcufleet::v1::NodeView>() : NewArenaView(e.view_arena_bytes);
      // A new view from the old one's small fields and the report's inventory
      // and instances, moved rather than copied.
      v->set_node_id(old.node_id());
      v->set_name(old.name());
      v->set_state(old.state());
      v->set_agent_version(old.agent_version());
      *v->mutable_capabilities() = old.capabilities();
      v->set_registered_at_ms(old.registered_at_ms());
      v->set_state_reason(old.state_reason());
      v->set_connected_since_ms(old.connected_since_ms());
      v->set_address(old.address());
      if (old.has_drain()) *v->mutable_drain() = old.drain();
      if (old.has_cordon()) *v->mutable_cordon() = old.cordon();
      // Whether anything a reader acts on changes (else the view keeps its
      // revision: SnapshotVersioned).
      bool visible = full;
      if (TakeDrainLocked(node, status.has_drain() ? &status.drain() : nullptr, v.get(), &events)) {
        changed = true;
        visible = true;
      }
      if (full) {
        v->mutable_inventory()->Swap(status.mutable_inventory());
        e.inventory_dirty = true;
        e.inventory_digest = options_.accept_inventory_digest ? status.inventory_digest() : 0;
        e.reports.set_full(e.reports.full() + 1);
      } else {
        *v->mutable_inventory() = old.inventory();
        // Counted as received, also when not taken (--inventory-delta=false):
        // the count shows what the agent sent.
        if (status.inventory_digest() != 0) e.reports.set_delta(e.reports.delta() + 1);
        if (delta) {
          bool moved = false;
          absl::Status applied =
              status.inventory_digest() == e.inventory_digest
                  ? common::ApplyMovingFigures(status, v->mutable_inventory(), &moved)
                  : absl::FailedPreconditionError(absl::StrCat(
                        "its digest ", status.inventory_digest(), " is not the held inventory's ",
                        e.inventory_digest));
          if (applied.ok()) {
            e.inventory_dirty = true;
            visible |= moved;
          } else if (now - e.inventory_requested >= kInventoryRequestEvery && e.session != nullptr) {
            // The inventory stays as it was until the full one comes.
            dcufleet::v1::ControllerMessage ask;
            ask.mutable_inventory_request()->set_reason(
                absl::StrCat("the report without inventory was not applied: ", applied.message()));
            if (e.session->Send(ask)) {
              e.inventory_requested = now;
              e.reports.set_inventory_requests(e.reports.inventory_requests() + 1);
              DCU_LOG_DEBUG("node '", node, "': asked for its full inventory (", applied.message(), ")");
            }
          }
        }
      }
      v->mutable_instances()->Swap(status.mutable_instances());
      if (InstancesDiffer(old.instances(), v->instances())) {
        changed = true;
        visible = true;
      }
      e.last_seen = now;
      v->set_last_seen_ms(common::ToUnixMillis(now));
      if (!full) {
        if (auto* arena = v->GetArena()) e.view_arena_bytes = arena->SpaceAllocated();
      }
      PublishLocked(e, std::move(v), /*keep_revision=*/!visible);
      if (e.view->state() != dcufleet::v1::NODE_READY) {
        SetStateLocked(e, dcufleet::v1::NODE_READY, "reporting again", &events);
      }
    }
  }
  FlushEvents(events);
  if (listener_ && (changed || !events.empty())) listener_->OnFleetChanged();
  return absl::OkStatus();
}

absl::Status FleetState::OnInstanceEvent(const std::string& node,
                                         const dcufleet::v1::InstanceEvent& event,
                                         NodeSession* session) {
  bool applied = false;
  absl::Status s = OnInstanceEventLocked(node, event, session, &applied);
  if (s.ok() && applied && listener_) listener_->OnFleetChanged();
  return s;
}

absl::Status FleetState::OnInstanceEventLocked(const std::string& node,
                                               const dcufleet::v1::InstanceEvent& event,
                                               NodeSession* session, bool* applied) {
  *applied = false;
  absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  absl::StatusOr<NodeEntry*> entry = ConnectedEntryLocked(node, session);
  if (!entry.ok()) return entry.status();
  NodeEntry& e = **entry;
  e.last_seen = now;
  // What a node may say, in rate and in content (docs/security.md): events
  // past the node's budget, or about an instance that is neither assigned
  // to it nor reported by it, are dropped and counted. The next full status
  // report carries every instance anyway, so a dropped event delays news by
  // one status interval at most.
  const double elapsed_s =
      e.tokens_at == absl::Time() ? 0 : absl::ToDoubleSeconds(now - e.tokens_at);
  e.event_tokens =
      std::min(kInstanceEventBurst, e.event_tokens + elapsed_s * kInstanceEventsPerSecond);
  // What was dropped recently, drained at the node's rate: it grows only
  // while the node sends more than twice its budget.
  e.event_excess = std::max(0.0, e.event_excess - elapsed_s * kInstanceEventsPerSecond);
  e.tokens_at = now;
  if (e.event_tokens < 1) {
    CountDropLocked(e, node, Drop::kRateLimited, "instance events beyond the node's rate");
    e.event_excess += 1;
    if (e.event_excess > kInstanceEventBurst) {
      e.event_excess = 0;
      e.flood_until = now + kFloodPenalty;
      return absl::ResourceExhaustedError(absl::StrCat(
          "node '", node, "' sent instance events far beyond ", kInstanceEventsPerSecond,
          "/s (burst ", kInstanceEventBurst, "): disconnected for ",
          absl::FormatDuration(kFloodPenalty)));
    }
    return absl::OkStatus();
  }
  e.event_tokens -= 1;
  const std::string& id = event.status().instance_id();
  int index = -1;
  for (int i = 0; i < e.view->instances_size(); ++i) {
    if (e.view->instances(i).instance_id() == id) index = i;
  }
  if (index < 0 && !e.assigned.contains(id)) {
    CountDropLocked(e, node, Drop::kUnknownInstance,
                    absl::StrCat("event for instance '", id, "', which the node does not run"));
    return absl::OkStatus();
  }
  dcufleet::v1::NodeView* view = MutableView(e);
  if (index >= 0) {
    *view->mutable_instances(index) = event.status();
  } else {
    *view->add_instances() = event.status();
  }
  *applied = true;
  if (event.status().phase() == dcufleet::v1::INSTANCE_FAILED) {
    // When a failure reached the controller, apart from when a pass acted
    // on it: bench/loadgen/failover_breakdown.py splits failover latency
    // with it (one line per failure, not per report).
    DCU_LOG_DEBUG("node '", node, "' reported instance '", id, "' FAILED");
  }
  return absl::OkStatus();
}

void FleetState::CountDropLocked(NodeEntry& e, const std::string& node, Drop drop,
                                 const std::string& reason) {
  dcufleet::v1::NodeDrops& d = e.drops;
  switch (drop) {
    case Drop::kRateLimited:
      d.set_events_rate_limited(d.events_rate_limited() + 1);
      break;
    case Drop::kUnknownInstance:
      d.set_events_unknown_instance(d.events_unknown_instance() + 1);
      break;
    case Drop::kRefused:
      d.set_messages_refused(d.messages_refused() + 1);
      break;
  }
  absl::Time now = clock_->Now();
  e.drops.set_last_reason(reason);
  e.drops.set_last_at_ms(common::ToUnixMillis(now));
  ++e.unlogged_drops;
  if (now - e.drops_logged >= absl::Seconds(10)) {
    DCU_LOG_WARN("node '", node, "': dropped ", e.unlogged_drops, " message(s) (last: ", reason, ")");
    e.unlogged_drops = 0;
    e.drops_logged = now;
  }
}

void FleetState::OnRefused(const std::string& node, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  CountDropLocked(it->second, node, Drop::kRefused, reason);
}

void FleetState::OnGoodbye(const std::string& node, const std::string& reason, NodeSession* session) {
  std::vector<Event> events;
  {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end() || it->second.session != session) return;
    NodeEntry& e = it->second;
    if (e.view->state() != dcufleet::v1::NODE_LOST) {
      SetStateLocked(e, dcufleet::v1::NODE_LOST, absl::StrCat("agent left: ", reason), &events);
    }
  }
  FlushEvents(events);
  if (listener_) listener_->OnFleetChanged();
}

void FleetState::OnAllocationEnded(const std::string& job_id, const std::string& reason) {
  std::vector<Event> events;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [name, e] : nodes_) {
      const auto& a = e.view->inventory().allocation();
      if (a.job_id() != job_id || a.scheduler() != "slurm") continue;
      if (e.view->state() != dcufleet::v1::NODE_LOST) {
        SetStateLocked(e, dcufleet::v1::NODE_LOST, reason, &events);
      }
    }
  }
  if (events.empty()) return;
  FlushEvents(events);
  if (listener_) listener_->OnFleetChanged();
}

void FleetState::OnDisconnect(const std::string& node, NodeSession* session) {
  std::vector<Event> events;
  {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end() || it->second.session != session) return;
    NodeEntry& e = it->second;
    e.session = nullptr;
    MutableView(e)->set_connected_since_ms(0);
    if (e.view->state() == dcufleet::v1::NODE_READY) {
      SetStateLocked(e, dcufleet::v1::NODE_NOT_READY, "agent stream closed", &events);
    }
  }
  FlushEvents(events);
  if (listener_) listener_->OnFleetChanged();
}

bool FleetState::TakeDrainLocked(const std::string& node, const dcufleet::v1::NodeDrain* reported,
                                 dcufleet::v1::NodeView* view, std::vector<Event>* events) {
  const int64_t now_ms = common::ToUnixMillis(clock_->Now());
  if (reported == nullptr) {
    // A new job on the same node name (a fresh view from its Hello), or an
    // agent that stopped draining.
    const bool had = draining_.erase(node) > 0 || view->has_drain();
    if (!had) return false;
    view->clear_drain();
    events->push_back(Event{0, now_ms, "node", node, "Normal", "DrainEnded",
                            "the agent no longer drains: the node takes replicas again"});
    return true;
  }
  dcufleet::v1::NodeDrain drain = *reported;
  if (drain.reason().size() > kMaxDrainReason) {
    drain.set_reason(absl::StrCat(drain.reason().substr(0, kMaxDrainReason), "…"));
  }
  const bool began = !view->has_drain();
  if (!began && view->drain().reason() == drain.reason() &&
      view->drain().deadline_ms() == drain.deadline_ms()) {
    return false;
  }
  *view->mutable_drain() = std::move(drain);
  if (view->state() != dcufleet::v1::NODE_LOST) draining_.insert(node);
  const int64_t left_s = std::max<int64_t>(0, (view->drain().deadline_ms() - now_ms) / 1000);
  events->push_back(Event{0, now_ms, "node", node, "Warning", began ? "Draining" : "DrainChanged",
                          absl::StrCat(view->drain().reason(), "; its replicas are moved, and it "
                                       "stops what still runs in ", left_s, " s")});
  return true;
}

std::vector<std::string> FleetState::DrainingNodes() const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> all = draining_;
  for (const std::string& node : drained_by_cordon_) {
    // A Lost node has left: its replicas are rescheduled, not moved.
    auto it = nodes_.find(node);
    if (it != nodes_.end() && it->second.view->state() != dcufleet::v1::NODE_LOST) all.insert(node);
  }
  return {all.begin(), all.end()};
}

absl::StatusOr<dcufleet::v1::NodeView> FleetState::SetCordon(const std::string& node,
                                                             std::optional<dcufleet::v1::NodeCordon> cordon) {
  absl::MutexLock one_at_a_time(&cordon_mu_);
  {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("node '", node, "' not found"));
    // Cordoned already (a drain after a cordon, a drain --wait again): it
    // has been out of scheduling since then, for the reason given then
    // unless a new one is.
    if (cordon && it->second.view->has_cordon()) {
      const dcufleet::v1::NodeCordon& was = it->second.view->cordon();
      cordon->set_since_ms(was.since_ms());
      if (cordon->reason().empty()) cordon->set_reason(was.reason());
    }
  }
  if (cordon && cordon->reason().size() > kMaxDrainReason) {
    cordon->set_reason(absl::StrCat(cordon->reason().substr(0, kMaxDrainReason), "…"));
  }
  // Stored first: what the view shows is what a restart or a standby loads.
  absl::Status stored = store_->SetNodeCordon(node, cordon ? &*cordon : nullptr);
  if (!stored.ok()) return stored;
  std::vector<Event> events;
  dcufleet::v1::NodeView out;
  {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("node '", node, "' was forgotten meanwhile"));
    NodeEntry& e = it->second;
    const bool was = e.view->has_cordon(), was_drain = was && e.view->cordon().drain();
    dcufleet::v1::NodeView* view = MutableView(e);
    const int64_t now_ms = common::ToUnixMillis(clock_->Now());
    if (cordon) {
      const std::string why = cordon->reason().empty() ? "" : absl::StrCat(" (", cordon->reason(), ")");
      if (cordon->drain()) {
        drained_by_cordon_.insert(node);
        if (!was_drain) {
          events.push_back(Event{0, now_ms, "node", node, "Warning", "Draining",
                                 absl::StrCat("drained by a person", why, ": nothing new is placed here, and its "
                                              "replicas are moved, each once its replacement is Ready")});
        }
      } else {
        drained_by_cordon_.erase(node);
        if (!was || was_drain) {
          events.push_back(Event{0, now_ms, "node", node, "Warning", "Cordoned",
                                 absl::StrCat("cordoned", why, ": nothing new is placed here; what runs stays")});
        }
      }
      *view->mutable_cordon() = *std::move(cordon);
    } else {
      drained_by_cordon_.erase(node);
      view->clear_cordon();
      if (was) {
        events.push_back(Event{0, now_ms, "node", node, "Normal", "Uncordoned",
                               "uncordoned: the node takes replicas again"});
      }
    }
    out = *view;
  }
  FlushEvents(events);
  if (listener_) listener_->OnFleetChanged();
  return out;
}

void FleetState::SetStateLocked(NodeEntry& e, NodeState state, const std::string& reason,
                                std::vector<Event>* events) {
  NodeState old = e.view->state();
  // A Lost node has left: its replicas are rescheduled as any Lost node's,
  // not moved.
  if (state == dcufleet::v1::NODE_LOST) draining_.erase(e.view->name());
  if (state == dcufleet::v1::NODE_LOST && old != dcufleet::v1::NODE_LOST) e.lost_at = clock_->Now();
  dcufleet::v1::NodeView* view = MutableView(e);
  view->set_state(state);
  view->set_state_reason(reason);
  int64_t now_ms = common::ToUnixMillis(clock_->Now());
  events->push_back(Event{0, now_ms, "node", view->name(),
                          state == dcufleet::v1::NODE_READY ? "Normal" : "Warning",
                          std::string(common::NodeStateName(state)),
                          absl::StrCat(common::NodeStateName(old), " -> ",
                                       common::NodeStateName(state), ": ", reason)});
}

void FleetState::FlushEvents(const std::vector<Event>& events) {
  if (events.empty()) return;
  // One transaction for the states and one for the events, however many:
  // a tick can find thousands of nodes silent (a controller that stalled, a
  // switch that dropped), and a transaction per node per event kept the
  // caller -- a gRPC thread or the tick -- busy for seconds.
  std::vector<NodeStore::StateUpdate> states;
  std::vector<std::string> lines;
  for (const Event& ev : events) {
    if (ev.subject_kind == "node" &&
        (ev.reason == "Ready" || ev.reason == "NotReady" || ev.reason == "Lost")) {
      states.push_back({ev.subject, ev.reason, ev.message, ev.at_ms});
      lines.push_back(absl::StrCat("node '", ev.subject, "' ", ev.message));
    } else if (ev.subject_kind == "node" &&
               (absl::StartsWith(ev.reason, "Drain") || ev.reason == "Forgotten")) {
      lines.push_back(absl::StrCat("node '", ev.subject, "' ", ev.reason, ": ", ev.message));
    }
  }
  if (!states.empty()) {
    absl::Status s = store_->UpdateNodeStates(states);
    if (!s.ok()) DCU_LOG_WARN("persisting the state of ", states.size(), " node(s): ", s.message());
  }
  common::LogLines(common::LogLevel::kInfo, lines);
  if (events_) {
    absl::Status s = events_->AppendEvents(events);
    if (!s.ok()) DCU_LOG_WARN("appending ", events.size(), " event(s): ", s.message());
  }
}

void FleetState::Tick() {
  absl::Time now = clock_->Now();
  std::vector<Event> events;
  std::vector<std::pair<std::string, std::shared_ptr<const dcufleet::v1::NodeView>>> to_persist;
  std::vector<std::string> forget;
  {
    absl::MutexLock lock(&mu_);
    // Ticks come about once a second: spread a full round of inventory
    // writes over the persist interval.
    const size_t budget = std::max<size_t>(
        64, static_cast<size_t>(static_cast<double>(nodes_.size()) /
                                std::max(1.0, absl::ToDoubleSeconds(options_.inventory_persist_interval))) + 1);
    for (auto& [name, e] : nodes_) {
      if (e.times_only && e.view.use_count() == 1) {
        // Nobody holds the view now: the deferred report's times go in,
        // in place (a Snapshot() reader sees them from here on).
        ApplyTimesOnly(e, const_cast<dcufleet::v1::NodeView*>(e.view.get()));  // sole owner, under mu_
        e.times_only.reset();
        e.inventory_dirty = true;
      }
      absl::Duration silent = now - e.last_seen;
      // Spelled only for a transition: this loop holds the lock every report
      // handler needs, once a second over every node.
      auto no_report_for = [&] {
        return absl::StrCat("no report for ", common::HumanDuration(absl::ToInt64Milliseconds(silent)));
      };
      if (silent >= options_.lost_after && e.view->state() != dcufleet::v1::NODE_LOST) {
        SetStateLocked(e, dcufleet::v1::NODE_LOST, no_report_for(), &events);
      } else if (silent >= options_.not_ready_after &&
                 e.view->state() == dcufleet::v1::NODE_READY) {
        SetStateLocked(e, dcufleet::v1::NODE_NOT_READY, no_report_for(), &events);
      }
      // At most a share of the fleet per tick, so that 10,000 inventories
      // due together become a steady trickle of small transactions rather
      // than a burst that holds the database for a second (measured with
      // bench/loadgen: failovers waited behind it).
      if (e.inventory_dirty && now - e.inventory_persisted >= options_.inventory_persist_interval &&
          to_persist.size() < budget) {
        to_persist.emplace_back(name, e.view);
        e.inventory_dirty = false;
        e.inventory_persisted = now;
      }
      const auto& job = e.view->inventory().allocation();
      if (options_.forget_job_nodes_after > absl::ZeroDuration() && !job.job_id().empty() &&
          e.view->state() == dcufleet::v1::NODE_LOST && e.session == nullptr &&
          now - e.lost_at >= options_.forget_job_nodes_after) {
        forget.push_back(name);
        events.push_back(Event{
            0, common::ToUnixMillis(now), "node", name, "Normal", "Forgotten",
            absl::StrCat("forgotten: Lost for ", common::HumanDuration(absl::ToInt64Milliseconds(now - e.lost_at)),
                         " inside ", job.scheduler().empty() ? "batch" : job.scheduler(), " job '",
                         job.job_id(), "' (", e.view->state_reason(), ")")});
      }
    }
    for (const std::string& name : forget) {
      nodes_.erase(name);
      draining_.erase(name);
      drained_by_cordon_.erase(name);
    }
  }
  // The row goes after the view: an agent that said Hello in between has
  // registered again (a fresh row) and loses nothing but this one row's
  // history, which its Hello rewrites.
  for (const std::string& name : forget) {
    absl::Status s = store_->DeleteNode(name);
    if (!s.ok() && !absl::IsNotFound(s)) DCU_LOG_WARN("forgetting node '", name, "': ", s.message());
  }
  FlushEvents(events);
  if (!events.empty() && listener_) listener_->OnFleetChanged();
  if (!to_persist.empty()) {
    std::vector<std::pair<std::string, const dcufleet::v1::NodeInventory*>> batch;
    batch.reserve(to_persist.size());
    for (const auto& [name, view] : to_persist) batch.emplace_back(name, &view->inventory());
    absl::Status s = store_->UpdateInventories(batch, common::ToUnixMillis(now));
    if (!s.ok()) DCU_LOG_WARN("persisting ", batch.size(), " inventories: ", s.message());
  }
}

std::vector<dcufleet::v1::NodeView> FleetState::ListNodes() const {
  absl::MutexLock lock(&mu_);
  std::vector<dcufleet::v1::NodeView> out;
  out.reserve(nodes_.size());
  for (const auto& [name, e] : nodes_) {
    out.push_back(*e.view);
    if (e.times_only) ApplyTimesOnly(e, &out.back());
    if (e.drops.ByteSizeLong() > 0) *out.back().mutable_drops() = e.drops;
    *out.back().mutable_reports() = e.reports;
  }
  return out;
}

std::vector<std::shared_ptr<const dcufleet::v1::NodeView>> FleetState::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<const dcufleet::v1::NodeView>> out;
  out.reserve(nodes_.size());
  for (const auto& [name, e] : nodes_) out.push_back(e.view);
  return out;
}

std::vector<FleetState::VersionedView> FleetState::SnapshotVersioned() const {
  absl::MutexLock lock(&mu_);
  std::vector<VersionedView> out;
  out.reserve(nodes_.size());
  for (const auto& [name, e] : nodes_) out.push_back({e.view, e.revision});
  return out;
}

std::optional<dcufleet::v1::NodeView> FleetState::GetNode(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  dcufleet::v1::NodeView out = *it->second.view;
  if (it->second.times_only) ApplyTimesOnly(it->second, &out);
  if (it->second.drops.ByteSizeLong() > 0) *out.mutable_drops() = it->second.drops;
  *out.mutable_reports() = it->second.reports;
  return out;
}

absl::StatusOr<dcufleet::v1::CommandResult> FleetState::RunCommand(const std::string& node,
                                                                  dcufleet::v1::Command command,
                                                                  absl::Duration timeout) {
  command.set_command_id(common::NewId("cmd"));
  dcufleet::v1::ControllerMessage msg;
  *msg.mutable_command() = command;
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return absl::NotFoundError(absl::StrCat("node '", node, "' not found"));
  if (it->second.session == nullptr || !it->second.session->Send(msg)) {
    return absl::UnavailableError(absl::StrCat("node '", node, "' is not connected"));
  }
  const std::string id = command.command_id();
  pending_commands_[id] = PendingCommand{node, std::nullopt};
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return pending_commands_[id].result.has_value();
  };
  mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  std::optional<dcufleet::v1::CommandResult> r = std::move(pending_commands_[id].result);
  pending_commands_.erase(id);
  if (!r) {
    return absl::DeadlineExceededError(absl::StrCat("node '", node, "' did not answer within ",
                                                    absl::FormatDuration(timeout)));
  }
  return *r;
}

absl::Status FleetState::OnCommandResult(const std::string& node,
                                         const dcufleet::v1::CommandResult& result) {
  absl::MutexLock lock(&mu_);
  auto it = pending_commands_.find(result.command_id());
  if (it == pending_commands_.end()) return absl::OkStatus();  // late: the caller gave up
  if (it->second.node != node) {
    return absl::PermissionDeniedError(absl::StrCat("node '", node, "' answered command '",
                                                    result.command_id(), "', which was not sent to it"));
  }
  it->second.result = result;
  return absl::OkStatus();
}

bool FleetState::SendToNode(const std::string& node, dcufleet::v1::ControllerMessage message) {
  return Send(node, std::nullopt, std::move(message));
}

bool FleetState::SendAssignment(const std::string& node, std::vector<std::string> instance_ids,
                                dcufleet::v1::ControllerMessage message) {
  return Send(node, std::move(instance_ids), std::move(message));
}

bool FleetState::Send(const std::string& node, std::optional<std::vector<std::string>> assigned_ids,
                      dcufleet::v1::ControllerMessage message) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.session == nullptr) return false;
  if (assigned_ids) {
    // What the node runs from now on: the instances its events may speak of.
    auto& assigned = it->second.assigned;
    assigned.clear();
    for (auto& id : *assigned_ids) assigned.insert(std::move(id));
  }
  return it->second.session->Send(std::move(message));
}

}  // namespace dcu::controller
