#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::controller {

enum class UpsertOutcome { kAdded, kUpdated, kUnchanged };

struct EvidenceFilter {
  // Empty fields match everything.
  std::string stack_id;
  std::string arch;
  std::string model;
  std::string node;
  // <= 0: all rows.
  int limit = 0;
  // Oldest first unless set (the limit then keeps the newest rows).
  bool newest_first = false;
};

// Durable knowledge: stacks, evidence, the model catalog, and what agents
// found on their nodes. Verdicts are never stored; they are computed from
// evidence (modelkit/verdict.h). Implementations are safe to call
// from any thread.
class CatalogStore {
 public:
  virtual ~CatalogStore() = default;

  // Imports a parsed, validated catalog (catalog_loader.h) in one
  // transaction: stacks and models upserted, evidence added. Re-importing the
  // same files changes nothing and reports everything unchanged. An evidence
  // row whose id exists with other content is updated (an edited seed file).
  // NOT_FOUND, writing nothing, when evidence refers to a stack that is
  // neither in the file nor stored.
  virtual absl::StatusOr<dcufleet::v1::ImportCatalogResponse> ImportCatalog(
      const dcufleet::v1::CatalogFile& file, int64_t now_ms) = 0;

  // Inserts or replaces a stack by id; created_at_ms is kept on update.
  // INVALID_ARGUMENT for an empty id.
  virtual absl::StatusOr<UpsertOutcome> UpsertStack(const dcufleet::v1::Stack& stack,
                                                    int64_t now_ms) = 0;
  // All stacks, by id.
  virtual absl::StatusOr<std::vector<dcufleet::v1::Stack>> ListStacks() = 0;
  // NOT_FOUND when no stack has that id.
  virtual absl::StatusOr<dcufleet::v1::Stack> GetStack(const std::string& id) = 0;

  // Appends one row; an empty evidence_id gets a new id. Returns false when
  // an identical row with that id exists (nothing written). ALREADY_EXISTS
  // when the id exists with other content; NOT_FOUND when the stack is unknown.
  virtual absl::StatusOr<bool> RecordEvidence(const dcufleet::v1::Evidence& evidence) = 0;
  // RecordEvidence of each row, all in one transaction (one commit for a
  // reconcile pass's launches); an error of any row writes none of them.
  virtual absl::StatusOr<std::vector<bool>> RecordEvidenceBatch(
      const std::vector<dcufleet::v1::Evidence>& evidence) = 0;
  virtual absl::StatusOr<std::vector<dcufleet::v1::Evidence>> ListEvidence(
      const EvidenceFilter& filter) = 0;
  // The rows recorded after the store's sequence number `*after` (0: every
  // row), in the order recorded; `*after` becomes the last one's, so a
  // reader that keeps it reads each row once. On PostgreSQL two writers can
  // commit out of sequence order: a row committed late behind a higher one
  // already read is missed by this call (a full ListEvidence finds it).
  virtual absl::StatusOr<std::vector<dcufleet::v1::Evidence>> ListEvidenceRecordedAfter(
      int64_t* after) = 0;

  virtual absl::StatusOr<UpsertOutcome> UpsertModel(const dcufleet::v1::ModelEntry& model,
                                                    int64_t now_ms) = 0;
  // All models, by name.
  virtual absl::StatusOr<std::vector<dcufleet::v1::ModelEntry>> ListModels() = 0;
  // NOT_FOUND when no model has that name.
  virtual absl::StatusOr<dcufleet::v1::ModelEntry> GetModel(const std::string& name) = 0;

  // Replaces the set of model directories recorded for `node` (directories
  // no longer reported are forgotten).
  virtual absl::Status ReplaceNodeModelDirectories(
      const std::string& node, const std::vector<dcufleet::v1::NodeModelDirectory>& dirs,
      int64_t now_ms) = 0;
  // For one node, or every node when `node` is empty; by node then path.
  virtual absl::StatusOr<std::vector<dcufleet::v1::NodeModelDirectory>> ListNodeModelDirectories(
      const std::string& node) = 0;

  // Replaces the environments recorded for `node`. Each is matched to a known
  // stack (modelkit/discovery.h) or registered as a new untested
  // stack. Environments without an engine are skipped. Returns the recorded
  // rows; registered_new marks the ones that created a stack.
  virtual absl::StatusOr<std::vector<dcufleet::v1::NodeEnvironment>> RecordNodeEnvironments(
      const std::string& node, const std::vector<dcufleet::v1::RuntimeEnvironment>& envs,
      int64_t now_ms) = 0;
  // What one node reported: its model directories and its environments.
  struct NodeObservation {
    std::string node;
    std::vector<dcufleet::v1::NodeModelDirectory> dirs;
    std::vector<dcufleet::v1::RuntimeEnvironment> envs;
  };
  // ReplaceNodeModelDirectories and RecordNodeEnvironments for every node
  // in `nodes`, in one transaction (a fleet connecting at once is one
  // commit, not two per node); the recorded environments per node, in
  // order. An error writes nothing.
  virtual absl::StatusOr<std::vector<std::vector<dcufleet::v1::NodeEnvironment>>> RecordNodeObservations(
      const std::vector<NodeObservation>& nodes, int64_t now_ms) = 0;
  // Where a stack is present, or every sighting when `stack_id` is empty.
  virtual absl::StatusOr<std::vector<dcufleet::v1::NodeEnvironment>> ListNodeEnvironments(
      const std::string& stack_id) = 0;
};

}  // namespace dcu::controller
