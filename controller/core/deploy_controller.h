#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/core/assignment_wire.h"
#include "controller/core/deploy_metrics.h"
#include "controller/core/fleet_state.h"
#include "controller/core/knowledge.h"
#include "controller/core/launch_planner.h"
#include "controller/core/node_pool.h"
#include "controller/core/remediation_policy.h"
#include "controller/store/deployment_store.h"
#include "controller/store/node_store.h"
#include "dcufleet/v1/deploy.pb.h"

namespace dcu::controller {

// The deploy reconciler (after TF Serving's AspiredVersionsManager): people
// and the API change the desired deployments; one thread compares them with
// what the agents report and acts — schedule, launch, diagnose, remediate,
// retry with back-off, fail over, reschedule off lost nodes — idempotently.
// Every decision is written to the store before it is sent to a node.
class DeployController : public FleetListener {
 public:
  struct Options {
    // Reconcile period when nothing wakes the loop; <= 0 disables the thread
    // (tests call ReconcileOnceForTest()).
    absl::Duration interval = absl::Seconds(1);
    // Defaults of DeploymentSpec's numbers: common/deployment_rules.cc.
    // Extra time past the start-up timeout before the controller itself
    // declares a silent attempt failed (the agent normally reports first).
    absl::Duration report_grace = absl::Seconds(60);
    uint64_t jitter_seed = 0;
    // Instance ports are the first free ones from here, per node.
    int instance_port_base = 8000;
    // Issue 20: how long a replica leaving a draining node is out of the
    // gateway's rotation before it stops (its requests in flight finish).
    absl::Duration serving_drain = absl::Seconds(10);
    // How often every node's model directories and environments are shown
    // to the knowledge (reconnected nodes are shown at once).
    absl::Duration observe_all_interval = absl::Seconds(10);
    // An HTTP mirror laid out like the Hugging Face hub ("http://mirror:8080"):
    // a node that lacks a model no node can give it copies it from there
    // (the catalog's hf_repo). "": none.
    std::string model_mirror;
    // A shared file system's directory of models that every node mounts
    // ("/lustre/models"; each agent lists it in --shared-model-root): tried
    // before the mirror. "": none.
    std::string model_shared_dir;
  };

  DeployController(FleetState* fleet, Knowledge* knowledge, Diagnoser* diagnoser,
                   DeploymentStore* store, EventLog* events, const common::Clock* clock,
                   Options options);
  ~DeployController();

  // Where the reconciler reports attempts, diagnoses, fail-overs,
  // remediations and pass durations (deploy_metrics.h); none by default.
  // Set before Start.
  void SetMetrics(DeployMetrics* metrics) { metrics_ = metrics; }

  // Node pools (node_pool.h) asked, in this order, for a node when a
  // replica fits no registered one; none by default. Set before Start.
  void SetPools(std::vector<NodePool*> pools) { pools_ = std::move(pools); }

  // Loads deployments and node generations from the store.
  absl::Status Load() ABSL_LOCKS_EXCLUDED(mu_);
  void Start();
  void Stop();

  // Creates (or, for an existing name with the same spec, returns) a
  // deployment. INVALID_ARGUMENT names the bad field; NOT_FOUND an unknown
  // model. An existing name with another replica count is scaled, with any
  // other change rolled (StartRollout). With dry_run the
  // plan and placement are computed and returned, nothing is stored.
  absl::StatusOr<dcufleet::v1::DeployResponse> Deploy(const dcufleet::v1::DeploymentSpec& spec,
                                                      bool dry_run) ABSL_LOCKS_EXCLUDED(mu_);
  // The same without waiting: `done` is called once the deployment is
  // durable (on the writer thread, which commits every deployment that
  // arrived meanwhile in one transaction; a scale or rollout there too, in
  // its turn), or at once for answers that need no write (errors, dry runs,
  // an unchanged deployment). It must not block.
  using DeployCallback = std::function<void(absl::StatusOr<dcufleet::v1::DeployResponse>)>;
  void DeployAsync(const dcufleet::v1::DeploymentSpec& spec, bool dry_run, DeployCallback done)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  std::vector<dcufleet::v1::Deployment> List() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<dcufleet::v1::Deployment> Get(const std::string& name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Marks the deployment deleted; its instances are removed from the nodes'
  // assignments and the row goes once the agents no longer report them.
  absl::StatusOr<dcufleet::v1::Deployment> Delete(const std::string& name)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  // The same without waiting: `done` is called once the mark is durable, on
  // the writer thread, which commits it with every create and delete that
  // arrived meanwhile (one transaction for the documents, one for the
  // events), or at once when nothing is written (not found, already
  // deleted). It must not block. A bulk delete was two transactions per
  // deployment, each on a gRPC thread (BENCHMARKS.md, "Deletes in groups").
  using DeleteCallback = std::function<void(absl::StatusOr<dcufleet::v1::Deployment>)>;
  void DeleteAsync(const std::string& name, DeleteCallback done) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  // Sets the number of replicas (ScaleDeploymentRequest's rules). Added
  // replicas are placed by the next pass; removed ones are the worst placed
  // (ReplicasToRemove) and stop as a deleted deployment's do. Commits on
  // the calling thread.
  absl::StatusOr<dcufleet::v1::ScaleDeploymentResponse> Scale(const std::string& name,
                                                              int replicas)
      ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  // The same without waiting: the writer thread runs it, in order with the
  // creates and deletes queued before it, and calls `done` there. It must
  // not block. (A scale on a gRPC thread waited for the store there.)
  using ScaleCallback =
      std::function<void(absl::StatusOr<dcufleet::v1::ScaleDeploymentResponse>)>;
  void ScaleAsync(const std::string& name, int replicas, ScaleCallback done)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  // Which attempt's log a reader asks for (dcuctl logs).
  struct AttemptSelector {
    // One instance, in any replica; the others must be unset then.
    std::string instance_id;
    // That replica (its index); else the replica Get() shows.
    std::optional<int> replica;
    // The attempt before its latest (kubectl logs --previous).
    bool previous = false;
  };
  struct FoundAttempt {
    // None while the chosen replica has not launched: it is being placed,
    // its model fetched, or it waits for room. A follower waits for it;
    // a single read says so (NOT_FOUND).
    std::optional<dcufleet::v1::Attempt> attempt;
    // Then why: "replica 0 of deployment 'q' has not launched yet: <what
    // its status says>".
    std::string not_launched;
    // Set when the replica is the one a deployment scaled to zero keeps:
    // what to say when its last instance's log is gone with it (and how to
    // start one again).
    std::string scaled_to_zero;
  };
  // The attempt `which` selects: NOT_FOUND naming what is not there (the
  // deployment, the replica and the ones it has, an earlier attempt),
  // INVALID_ARGUMENT for an instance id given with another choice.
  absl::StatusOr<FoundAttempt> FindAttempt(const std::string& name, const AttemptSelector& which) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until the deployment's revision exceeds `after_revision`, it is
  // gone (nullopt), or `timeout` passes (the current state).
  std::optional<dcufleet::v1::Deployment> WaitForChange(const std::string& name,
                                                        int64_t after_revision,
                                                        absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until any deployment changed after `after` (a value this
  // returned before; 0 at first) or `timeout` passes; returns the current
  // change count. What the gateway's serving watch waits on, instead of
  // listing every deployment on a timer.
  int64_t WaitForAnyChange(int64_t after, absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes the reconciler (fleet changed).
  void MarkDirty() ABSL_LOCKS_EXCLUDED(mu_);
  // FleetListener: the node (re)connected: send it its assignment again.
  void OnNodeConnected(const std::string& node) override ABSL_LOCKS_EXCLUDED(mu_);
  void OnFleetChanged() override { MarkDirty(); }
  void ReconcileOnceForTest() { ReconcileOnce(); }

  // The instances currently assigned to `node` (for tests and describe).
  std::vector<dcufleet::v1::InstanceSpec> AssignedTo(const std::string& node) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct StepContext;
  void Run();
  void ReconcileOnce() ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  // What has happened to a deployment, i.e. what Step() will do to it.
  enum class Transition {
    kNone,           // nothing: the pass neither copies nor steps it
    kStopDeleted,    // deleted and its instance is gone: end the attempt
    kLaunch,         // no active attempt and it is due: schedule and launch
    kNodeLost,       // the attempt's node is lost: end it, reschedule
    kReportOverdue,  // the node never reported the instance: a failure
    kFollowReport,   // the node reports something new about the instance
    kReconcileOrphan,  // a lost node is back: keep or stop its orphaned instance
  };
  // What an answer of Observe rests on besides the document: the nodes it
  // looked at (position in the pass's views and revision; npos for a name
  // the pass does not know) and the first time the clock alone could
  // change it (INT64_MAX: never).
  struct ObservedInputs {
    absl::InlinedVector<std::pair<size_t, uint64_t>, 2> nodes;
    int64_t recheck_at_ms = INT64_MAX;
  };
  // Pure; Step() acts on its answer and the pass selects by it, so "does it
  // need a step" and the step itself come from one function. With `inputs`,
  // also says what the answer read.
  Transition Observe(const dcufleet::v1::Deployment& d, const StepContext& ctx,
                     ObservedInputs* inputs = nullptr) const;
  // Advances one deployment; returns true when it changed.
  bool Step(dcufleet::v1::Deployment& d, StepContext& ctx);
  // The pass's views, their revisions and the name index.
  void BuildContext(StepContext& ctx);
  // The scheduling summaries of those views (ctx.sched, ctx.shapes): only
  // for a pass that schedules or takes holdings, and for a dry run.
  void BuildSchedule(StepContext& ctx);
  // Nodes that share an address share their instances' ports
  // (ScheduleNode::shared_host); part of BuildSchedule.
  static void ShareHostPorts(StepContext& ctx);
  static std::tuple<std::string, double, int> CursorKey(const dcufleet::v1::DeploymentSpec& spec);
  void EndOnLostNode(dcufleet::v1::Deployment& d, dcufleet::v1::Attempt& a, StepContext& ctx);
  // A node that was lost is Ready again and has said what it runs: an
  // orphaned instance it still runs is re-adopted when nothing replaced it
  // (an unready replacement is stopped), and stopped when a replacement is
  // Ready; one it no longer runs is forgotten.
  void ReconcileOrphan(dcufleet::v1::Deployment& d, StepContext& ctx);
  void FollowReport(dcufleet::v1::Deployment& d, dcufleet::v1::Attempt& a,
                    const dcufleet::v1::NodeView& node,
                    const dcufleet::v1::InstanceStatus& instance, StepContext& ctx);
  void HandleFailure(dcufleet::v1::Deployment& d, dcufleet::v1::Attempt& a, StepContext& ctx);
  bool TryLaunch(dcufleet::v1::Deployment& d, StepContext& ctx);
  // `d` fits no node (`fleet_lines`: why, per node): when a pool can
  // provide one, records the replica in the pass's demand for it, sets
  // Pending with the pool job's state and Slurm's reason in the message
  // (dcuctl describe deployment shows it), and returns true
  // (`changed`: the status changed); false when no pool applies
  // (deploy_provision.cc, the one home of that decision).
  bool ProvisionFromPool(dcufleet::v1::Deployment& d, const std::vector<std::string>& fleet_lines,
                         StepContext& ctx, bool* changed);
  // What every pool is told after a pass: the replicas waiting for a node
  // and the jobs whose nodes hold instances (from all deployments).
  static void CollectPoolDemandOf(const dcufleet::v1::Deployment& d, StepContext& ctx);
  // The same for a deployment this pass stepped, from its new state.
  void UpdatePoolDemand(const dcufleet::v1::Deployment& d, StepContext& ctx);
  // The scheduler's copy-first placement (pinned or not, issue 19): asks the
  // chosen node to copy the model from `r.copy`, once, and keeps the
  // deployment Pending with the copy's progress as the node reports it; the
  // launch follows on the pass after the node reports the directory.
  // Returns true when the deployment changed.
  bool AwaitModelCopy(dcufleet::v1::Deployment& d, StepContext& ctx, const ScheduleResult& r);
  // The deployment a dry run of `spec` answers with (nothing is stored).
  dcufleet::v1::Deployment DryRun(const dcufleet::v1::DeploymentSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_);
  ScheduleInput MakeScheduleInput(const dcufleet::v1::Deployment& d, StepContext& ctx);
  void AddEvent(StepContext& ctx, const dcufleet::v1::Deployment& d, const std::string& type,
                const std::string& reason, const std::string& message);
  absl::Duration Backoff(const dcufleet::v1::Deployment& d, int failures_on_plan);
  // Per node, the instances it is meant to run (pointers into documents the
  // caller keeps alive).
  using DesiredSets =
      absl::flat_hash_map<std::string, std::vector<const dcufleet::v1::InstanceSpec*>>;
  void PushAssignments(const DesiredSets& desired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_)
      ABSL_LOCKS_EXCLUDED(mu_);
  dcufleet::v1::DeploymentSpec WithDefaults(dcufleet::v1::DeploymentSpec spec) const;
  // Records `spec` as the target of every live replica of an existing
  // deployment (a rollout; replica_set.h NextRolloutStep) and answers with
  // the deployment as readers now see it; `changes` gets what changed
  // (SpecChanges: "max_model_len 32768 -> 8192").
  absl::StatusOr<dcufleet::v1::Deployment> StartRollout(const dcufleet::v1::DeploymentSpec& spec,
                                                        std::string* changes)
      ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  // One rollout step for every deployment in rolling_ (after a pass, so it
  // sees this pass's phases); events for the steps taken go to `events`.
  void AdvanceRollouts(std::vector<Event>* events) ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  // One step (replica_set.h NextEvacuationStep) for every deployment with
  // a replica on a draining node (issue 20), or that had one and is not
  // settled yet (evacuating_).
  void AdvanceEvacuations(std::vector<Event>* events) ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  // Persists the replica documents a rollout or evacuation step made, then
  // takes them in; on a store error nothing is taken and `events` cut
  // back to its first `first_event` (the next pass tries again).
  void CommitReplicaSteps(std::vector<dcufleet::v1::Deployment> docs,
                          const std::vector<std::string>& names, const std::string& what,
                          std::vector<Event>* events, size_t first_event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(doc_write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // A replica document marked for removal, and a new one like `like`.
  static dcufleet::v1::Deployment RemovedReplica(const dcufleet::v1::Deployment& r,
                                                 const std::string& why, int64_t now_ms);
  static dcufleet::v1::Deployment AddedReplica(const dcufleet::v1::Deployment& like,
                                               const dcufleet::v1::DeploymentSpec& spec, int index,
                                               const std::string& why, int64_t now_ms);
  // Every replica document of `name`, in key order (replica 0 first).
  std::vector<const dcufleet::v1::Deployment*> ReplicasOf(const std::string& name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What readers see of `name` (replica_set.h AggregateReplicas); nullopt
  // when it has no replica.
  std::optional<dcufleet::v1::Deployment> AggregateOf(const std::string& name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AggregateOf in two halves: the (immutable) documents' pointers and the
  // revision under mu_, the copy without it. A writer answering a
  // DeployMany of 64, or a reader, then holds mu_ for pointer copies only
  // and the pass does not wait behind whole-document copies.
  struct ReplicaDocs {
    std::vector<std::shared_ptr<const dcufleet::v1::Deployment>> docs;
    int64_t revision = 0;
  };
  ReplicaDocs ReplicaDocsOf(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::optional<dcufleet::v1::Deployment> Aggregate(const ReplicaDocs& replicas);
  // A create or a delete waiting for the writer's next transaction, or a
  // change the writer makes alone, in its turn.
  struct PendingWrite {
    // A scale or a rollout start: run by the writer between transactions
    // (it takes doc_write_mu_ itself); the fields below are unused.
    std::function<void()> run;
    std::string name;
    // One document per replica: a create's new ones; a delete's marked
    // ones, copied by CommitWrites under doc_write_mu_ (not when queued: a
    // pass may change them meanwhile).
    std::vector<dcufleet::v1::Deployment> docs;
    Event event;
    bool create = false;
    // Called with what readers see of the deployment once the write is in
    // memory, or with the store's error.
    std::function<void(absl::StatusOr<dcufleet::v1::Deployment>)> done;
  };
  // What a Deploy that needs a write does: create the deployment, scale it
  // (only --replicas changed, as `kubectl apply`) or roll it onto the spec.
  enum class DeployWrite { kCreate, kScale, kRoll };
  // Validates and answers what needs no write; nullopt: `*write` says
  // which write, with `spec` (defaults applied), and for a create
  // `create`'s documents and `created`.
  std::optional<absl::StatusOr<dcufleet::v1::DeployResponse>> Admit(
      const dcufleet::v1::DeploymentSpec& in, bool dry_run, DeployWrite* write,
      dcufleet::v1::DeploymentSpec* spec, std::vector<dcufleet::v1::Deployment>* create,
      Event* created) ABSL_LOCKS_EXCLUDED(mu_);
  // A Deploy's scale or rollout, on the writer (the answer DeployAsync gives).
  absl::StatusOr<dcufleet::v1::DeployResponse> ApplyToExisting(
      DeployWrite write, const dcufleet::v1::DeploymentSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  // Commits the creates and deletes of `batch` together and runs its other
  // changes alone, in queue order.
  void ProcessWrites(std::vector<PendingWrite>& batch) ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  void CommitWrites(std::vector<PendingWrite>& batch) ABSL_LOCKS_EXCLUDED(mu_, doc_write_mu_);
  // Hands `write` to the writer thread, or commits it here when the writer
  // is not running (before Start, after Stop).
  void QueueWrite(PendingWrite write) ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  void WriterLoop() ABSL_LOCKS_EXCLUDED(write_mu_);

  FleetState* const fleet_;
  Knowledge* const knowledge_;
  Diagnoser* const diagnoser_;
  DeploymentStore* const store_;
  EventLog* const events_;
  const common::Clock* const clock_;
  const Options options_;
  DeployMetrics* metrics_ = nullptr;
  std::vector<NodePool*> pools_;
  const LaunchPlanner planner_;
  const RemediationPolicy policy_;

  // The order of document writes. Every path that writes deployment
  // documents (the pass, the writer's creates and deletes, Scale,
  // StartRollout, a rollout's or a drain's replica steps) holds it from the
  // moment it reads what it changes (or checks that what it read is still
  // there) until its write is in the store and in memory. Without it a
  // pass could persist the older version it stepped after a delete's
  // marked one, and a controller killed before the next pass would load
  // the deployment undeleted. The pass steps without it and takes it only
  // to check, persist and publish; what changed meanwhile is left to the
  // next pass.
  absl::Mutex doc_write_mu_ ABSL_ACQUIRED_AFTER(reconcile_mu_);

  // Lock order (checked by clang's -Wthread-safety-beta where one function
  // takes both): reconcile_mu_ before doc_write_mu_, doc_write_mu_ before
  // mu_; reconcile_mu_ before cache_mu_. mu_,
  // cache_mu_ and write_mu_ are leaves: none of them is held while another
  // of the three is taken, nor while FleetState, the store, the knowledge or
  // a Deploy callback is called (only the clock is, under mu_). FleetState
  // calls MarkDirty/OnNodeConnected without its own lock held, so there is
  // no cycle through the listener.
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(reconcile_mu_, doc_write_mu_);
  // Keyed by ReplicaKey: "NAME" for replica 0, "NAME#K" for replica K.
  // Documents are immutable once in the map (a change replaces the
  // pointer), so a pass copies the pointers under mu_ and walks them without
  // it: admission and readers never wait for a walk over every deployment.
  using DocPtr = std::shared_ptr<const dcufleet::v1::Deployment>;
  std::map<std::string, DocPtr> deployments_ ABSL_GUARDED_BY(mu_);
  // Every document as of now, in key order: pointers only, taken under mu_.
  std::vector<DocPtr> SnapshotDocs() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts `d` in the map (replacing any document of its key).
  void PutDoc(dcufleet::v1::Deployment d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PutDoc for a document written outside the pass (a delete, a scale, a
  // rollout's or a drain's step): a deleted one's nodes are recomputed by
  // the next pass, so they lose its instance.
  void TakeInWritten(dcufleet::v1::Deployment d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The one way deployments_ changes: `doc` replaces the document of `key`
  // (null: removes it), and keys_by_node_ follows.
  void SetDoc(const std::string& key, DocPtr doc) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Per node, the keys of the documents with an attempt its agent is meant
  // to run (deploy_internal::ForEachAssignedAttempt), in key order: a pass
  // builds a node's desired set from these few documents, not from a walk
  // over every deployment (3-35 ms per pass at 4,000 deployments during a
  // failover, BENCHMARKS.md).
  absl::flat_hash_map<std::string, std::set<std::string>> keys_by_node_ ABSL_GUARDED_BY(mu_);
  // Per deployment name: grows whenever any of its replicas changes (what
  // watchers compare; a replica's own revision is its document's).
  std::map<std::string, int64_t> revisions_ ABSL_GUARDED_BY(mu_);
  // Names a reconcile pass changed (its own steps, rollouts, evacuations),
  // announced to watchers (NoteChange/NoteGone) by AnnounceChanges only once
  // the pass's events are in the log: a watcher woken by a new revision
  // reads the document and its events together (`dcuctl deploy --watch`,
  // which stops at the first Ready revision, printed the state without the
  // events that led to it). A pass that fails to persist leaves them to the
  // next pass.
  std::vector<std::string> announce_after_events_ ABSL_GUARDED_BY(mu_);
  void AnnounceChanges() ABSL_LOCKS_EXCLUDED(mu_);
  // Grows with every change of any deployment (WaitForAnyChange).
  int64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  // The one way revisions_ changes: a deployment's counter and changes_.
  void NoteChange(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++revisions_[name];
    ++changes_;
  }
  void NoteGone(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    revisions_.erase(name);
    ++changes_;
  }
  int64_t RevisionOf(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = revisions_.find(name);
    return it == revisions_.end() ? 1 : it->second;
  }
  std::map<std::string, int64_t> generations_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> resend_ ABSL_GUARDED_BY(mu_);
  // Nodes whose desired sets changed outside a pass (a delete).
  std::set<std::string> recompute_ ABSL_GUARDED_BY(mu_);
  // Nodes to show to the knowledge in the next pass.
  std::set<std::string> observe_ ABSL_GUARDED_BY(mu_);
  // Only the reconcile pass touches it.
  absl::Time last_observed_all_ ABSL_GUARDED_BY(reconcile_mu_) = absl::InfinitePast();
  // Per node, the Assignment it was last sent, each instance's bytes encoded
  // once (assignment_wire.h); only the pass pushes.
  std::map<std::string, EncodedAssignment> sent_ ABSL_GUARDED_BY(reconcile_mu_);
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t rng_state_ ABSL_GUARDED_BY(mu_) = 0;
  // Scheduling summaries of the nodes as of the last pass (see BuildContext).
  // By the view's revision, not the view: holding every view would keep
  // FleetState from changing any in place (FleetState::VersionedView).
  struct CachedNode {
    std::string name;
    uint64_t revision = 0;
    bool valid = false;
    ScheduleNode node;
  };
  // Taken by a pass (under reconcile_mu_) and by dry-run Deploys (alone).
  absl::Mutex cache_mu_ ABSL_ACQUIRED_AFTER(reconcile_mu_);
  std::vector<CachedNode> node_cache_ ABSL_GUARDED_BY(cache_mu_);
  std::shared_ptr<const absl::flat_hash_map<std::string, size_t>> index_cache_
      ABSL_GUARDED_BY(cache_mu_);
  // The names of index_cache_, by position (whether the set of nodes moved).
  std::vector<std::string> index_names_ ABSL_GUARDED_BY(cache_mu_);
  // Per document (held, so its address is not reused while the entry
  // lives): the last pass's Observe answered kNone from these inputs, and
  // with the same document, the same revisions at the same positions (same
  // index_epoch_) and a clock before recheck_at_ms it would again. Observing
  // every deployment was the select phase of every pass (7 ms at 4,000
  // deployments uncontended, up to 70 ms during a failover, BENCHMARKS.md).
  struct ObserveMemo {
    DocPtr doc;
    uint64_t index_epoch = 0;
    ObservedInputs inputs;
  };
  absl::flat_hash_map<const dcufleet::v1::Deployment*, ObserveMemo> observe_memo_
      ABSL_GUARDED_BY(reconcile_mu_);
  static bool StillObserved(const ObserveMemo& memo, const StepContext& ctx);
  // Grows whenever the pass's name index is rebuilt (node positions move).
  uint64_t index_epoch_ ABSL_GUARDED_BY(cache_mu_) = 0;
  // Deployments with a replica on an older spec, or one the rollout is
  // still removing (rebuilt by Load from the documents' target_spec).
  std::set<std::string> rolling_ ABSL_GUARDED_BY(mu_);
  // Deployments a drain moves replicas of (issue 20); rebuilt from the
  // fleet's draining nodes on every pass, so a restart loses nothing.
  std::set<std::string> evacuating_ ABSL_GUARDED_BY(mu_);
  // Deployments being created (queued for the writer).
  std::set<std::string> creating_ ABSL_GUARDED_BY(mu_);
  // A leaf: QueueWrite, Stop and the writer take it alone; CommitWrites
  // runs without it.
  absl::Mutex write_mu_;
  std::deque<PendingWrite> writes_ ABSL_GUARDED_BY(write_mu_);
  bool writer_running_ ABSL_GUARDED_BY(write_mu_) = false;
  bool writer_stop_ ABSL_GUARDED_BY(write_mu_) = false;
  std::thread writer_;
  // Serialises whole reconcile passes (the thread and tests). Outermost:
  // held across a pass, which takes mu_, cache_mu_ and the locks inside
  // FleetState, the store and the knowledge.
  absl::Mutex reconcile_mu_;
  std::thread thread_;
};

}  // namespace dcu::controller
