// Definitions of SqlCatalogStore<Db> (sql_catalog_store.h), included only by the files that
// instantiate it for one database: sqlite_catalog_store.cc and pg_catalog_store.cc.
#pragma once

#include "controller/store/sql_catalog_store.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "common/ids.h"
#include "common/legacy_fields.h"
#include "common/status_util.h"
#include "modelkit/discovery.h"
#include "google/protobuf/util/message_differencer.h"
#include "migrations/embedded_migrations.h"

namespace dcu::controller {
namespace {

namespace pb = google::protobuf;
using dcufleet::v1::Evidence;
using dcufleet::v1::ModelEntry;
using dcufleet::v1::NodeEnvironment;
using dcufleet::v1::NodeModelDirectory;
using dcufleet::v1::Stack;

std::string KindName(dcufleet::v1::RuntimeKind kind) { return std::string(common::RuntimeKindName(kind)); }

std::string OutcomeName(dcufleet::v1::LaunchOutcome o) {
  return o == dcufleet::v1::LAUNCH_READY ? "ready" : o == dcufleet::v1::LAUNCH_FAILED ? "failed" : "unspecified";
}

// Equal apart from bookkeeping timestamps.
bool SameStack(const Stack& a, const Stack& b) {
  pb::util::MessageDifferencer d;
  d.IgnoreField(Stack::descriptor()->FindFieldByName("created_at_ms"));
  d.IgnoreField(Stack::descriptor()->FindFieldByName("updated_at_ms"));
  return d.Compare(a, b);
}

template <typename T>
absl::StatusOr<T> Decode(const std::string& blob, absl::string_view what, absl::string_view key) {
  T msg;
  if (!msg.ParseFromString(blob)) {
    return absl::DataLossError(absl::StrCat("stored ", what, " '", key, "' does not decode"));
  }
  common::UpgradeLegacyFields(&msg);  // rows written before the enums
  return msg;
}

template <typename Db>
absl::StatusOr<std::optional<Stack>> FindStack(Db& db, const std::string& id) {
  DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT spec FROM stacks WHERE stack_id = ?"));
  q->Bind(1, id);
  DCU_ASSIGN_OR_RETURN(bool row, q->Step());
  if (!row) return std::optional<Stack>();
  DCU_ASSIGN_OR_RETURN(Stack s, Decode<Stack>(q->ColumnBlob(0), "stack", id));
  return std::optional<Stack>(std::move(s));
}

template <typename Db>
absl::StatusOr<UpsertOutcome> UpsertStackIn(Db& db, const Stack& in, int64_t now_ms) {
  if (in.id().empty()) return absl::InvalidArgumentError("stack id is empty");
  DCU_ASSIGN_OR_RETURN(std::optional<Stack> existing, FindStack(db, in.id()));
  Stack s = in;
  if (existing) {
    if (SameStack(*existing, in)) return UpsertOutcome::kUnchanged;
    s.set_created_at_ms(existing->created_at_ms());
  } else if (s.created_at_ms() == 0) {
    s.set_created_at_ms(now_ms);
  }
  s.set_updated_at_ms(now_ms);
  DCU_ASSIGN_OR_RETURN(auto st, db.Prepare(
      "INSERT INTO stacks(stack_id, engine, engine_version, runtime_kind, runtime_location, "
      "origin, spec, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT(stack_id) DO UPDATE SET engine = excluded.engine, "
      "engine_version = excluded.engine_version, runtime_kind = excluded.runtime_kind, "
      "runtime_location = excluded.runtime_location, origin = excluded.origin, "
      "spec = excluded.spec, updated_at_ms = excluded.updated_at_ms"));
  st->Bind(1, s.id()).Bind(2, s.engine()).Bind(3, s.engine_version())
      .Bind(4, KindName(s.runtime_kind())).Bind(5, s.runtime_location()).Bind(6, s.origin())
      .BindBlob(7, s.SerializeAsString()).Bind(8, s.created_at_ms()).Bind(9, s.updated_at_ms());
  DCU_RETURN_IF_ERROR(st->Run());
  return existing ? UpsertOutcome::kUpdated : UpsertOutcome::kAdded;
}

template <typename Db>
absl::StatusOr<std::vector<Stack>> ListStacksIn(Db& db) {
  std::vector<Stack> out;
  DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT stack_id, spec FROM stacks ORDER BY stack_id"));
  while (true) {
    DCU_ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    DCU_ASSIGN_OR_RETURN(Stack s, Decode<Stack>(q->ColumnBlob(1), "stack", q->ColumnText(0)));
    out.push_back(std::move(s));
  }
  return out;
}

// allow_update: replace a row whose id exists with other content.
template <typename Db>
absl::StatusOr<UpsertOutcome> PutEvidenceIn(Db& db, const Evidence& e,
                                            bool allow_update) {
  DCU_ASSIGN_OR_RETURN(std::optional<Stack> stack, FindStack(db, e.stack_id()));
  if (!stack) {
    return absl::NotFoundError(absl::StrCat("evidence '", e.evidence_id(),
                                            "' refers to unknown stack '", e.stack_id(), "'"));
  }
  DCU_ASSIGN_OR_RETURN(auto find, db.Prepare("SELECT row FROM evidence WHERE evidence_id = ?"));
  find->Bind(1, e.evidence_id());
  DCU_ASSIGN_OR_RETURN(bool exists, find->Step());
  if (exists) {
    DCU_ASSIGN_OR_RETURN(Evidence old, Decode<Evidence>(find->ColumnBlob(0), "evidence", e.evidence_id()));
    if (pb::util::MessageDifferencer::Equals(old, e)) return UpsertOutcome::kUnchanged;
    if (!allow_update) {
      return absl::AlreadyExistsError(absl::StrCat("evidence '", e.evidence_id(),
                                                   "' exists with other content"));
    }
    DCU_ASSIGN_OR_RETURN(auto upd, db.Prepare(
        "UPDATE evidence SET stack_id = ?, arch = ?, model = ?, node = ?, outcome = ?, "
        "failure_class = ?, at_ms = ?, row = ? WHERE evidence_id = ?"));
    upd->Bind(1, e.stack_id()).Bind(2, e.arch()).Bind(3, e.model()).Bind(4, e.node())
        .Bind(5, OutcomeName(e.outcome())).Bind(6, e.failure_class()).Bind(7, e.at_ms())
        .BindBlob(8, e.SerializeAsString()).Bind(9, e.evidence_id());
    DCU_RETURN_IF_ERROR(upd->Run());
    return UpsertOutcome::kUpdated;
  }
  DCU_ASSIGN_OR_RETURN(auto ins, db.Prepare(
      "INSERT INTO evidence(evidence_id, stack_id, arch, model, node, outcome, failure_class, "
      "at_ms, row) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  ins->Bind(1, e.evidence_id()).Bind(2, e.stack_id()).Bind(3, e.arch()).Bind(4, e.model())
      .Bind(5, e.node()).Bind(6, OutcomeName(e.outcome())).Bind(7, e.failure_class())
      .Bind(8, e.at_ms()).BindBlob(9, e.SerializeAsString());
  DCU_RETURN_IF_ERROR(ins->Run());
  return UpsertOutcome::kAdded;
}

template <typename Db>
absl::StatusOr<UpsertOutcome> UpsertModelIn(Db& db, const ModelEntry& m,
                                            int64_t now_ms) {
  if (m.name().empty()) return absl::InvalidArgumentError("model name is empty");
  DCU_ASSIGN_OR_RETURN(auto find, db.Prepare("SELECT entry FROM models WHERE name = ?"));
  find->Bind(1, m.name());
  DCU_ASSIGN_OR_RETURN(bool exists, find->Step());
  if (exists) {
    DCU_ASSIGN_OR_RETURN(ModelEntry old, Decode<ModelEntry>(find->ColumnBlob(0), "model", m.name()));
    if (pb::util::MessageDifferencer::Equals(old, m)) return UpsertOutcome::kUnchanged;
  }
  DCU_ASSIGN_OR_RETURN(auto st, db.Prepare(
      "INSERT INTO models(name, hf_repo, entry, updated_at_ms) VALUES (?, ?, ?, ?) "
      "ON CONFLICT(name) DO UPDATE SET hf_repo = excluded.hf_repo, entry = excluded.entry, "
      "updated_at_ms = excluded.updated_at_ms"));
  st->Bind(1, m.name()).Bind(2, m.hf_repo()).BindBlob(3, m.SerializeAsString()).Bind(4, now_ms);
  DCU_RETURN_IF_ERROR(st->Run());
  return exists ? UpsertOutcome::kUpdated : UpsertOutcome::kAdded;
}

}  // namespace

template <typename Db>
absl::StatusOr<std::unique_ptr<SqlCatalogStore<Db>>> SqlCatalogStore<Db>::Open(
    const std::string& path) {
  DCU_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path));
  DCU_RETURN_IF_ERROR(db->Migrate(migrations::EmbeddedMigrations(Db::kDialect)));
  return std::make_unique<SqlCatalogStore<Db>>(std::shared_ptr<Db>(std::move(db)));
}

template <typename Db>
absl::StatusOr<dcufleet::v1::ImportCatalogResponse> SqlCatalogStore<Db>::ImportCatalog(
    const dcufleet::v1::CatalogFile& file, int64_t now_ms) {
  dcufleet::v1::ImportCatalogResponse resp;
  DCU_RETURN_IF_ERROR(db_->Transaction([&](Db& db) -> absl::Status {
    for (const auto& s : file.stack()) {
      DCU_ASSIGN_OR_RETURN(UpsertOutcome o, UpsertStackIn(db, s, now_ms));
      if (o == UpsertOutcome::kAdded) resp.add_stacks_added(s.id());
      if (o == UpsertOutcome::kUpdated) resp.add_stacks_updated(s.id());
      if (o == UpsertOutcome::kUnchanged) resp.add_stacks_unchanged(s.id());
    }
    for (const auto& e : file.evidence()) {
      DCU_ASSIGN_OR_RETURN(UpsertOutcome o, PutEvidenceIn(db, e, /*allow_update=*/true));
      if (o == UpsertOutcome::kAdded) resp.set_evidence_added(resp.evidence_added() + 1);
      if (o == UpsertOutcome::kUpdated) resp.set_evidence_updated(resp.evidence_updated() + 1);
      if (o == UpsertOutcome::kUnchanged) resp.set_evidence_unchanged(resp.evidence_unchanged() + 1);
    }
    for (const auto& m : file.model()) {
      DCU_ASSIGN_OR_RETURN(UpsertOutcome o, UpsertModelIn(db, m, now_ms));
      if (o != UpsertOutcome::kUnchanged) resp.add_models_upserted(m.name());
    }
    return absl::OkStatus();
  }));
  return resp;
}

template <typename Db>
absl::StatusOr<UpsertOutcome> SqlCatalogStore<Db>::UpsertStack(const Stack& stack, int64_t now_ms) {
  UpsertOutcome out = UpsertOutcome::kUnchanged;
  DCU_RETURN_IF_ERROR(db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(out, UpsertStackIn(db, stack, now_ms));
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<std::vector<Stack>> SqlCatalogStore<Db>::ListStacks() {
  std::vector<Stack> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(out, ListStacksIn(db));
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<Stack> SqlCatalogStore<Db>::GetStack(const std::string& id) {
  std::optional<Stack> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(out, FindStack(db, id));
    return absl::OkStatus();
  }));
  if (!out) return absl::NotFoundError(absl::StrCat("stack '", id, "' not found"));
  return *std::move(out);
}

template <typename Db>
absl::StatusOr<bool> SqlCatalogStore<Db>::RecordEvidence(const Evidence& in) {
  Evidence e = in;
  if (e.evidence_id().empty()) e.set_evidence_id(common::NewId("ev"));
  UpsertOutcome o = UpsertOutcome::kUnchanged;
  DCU_RETURN_IF_ERROR(db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(o, PutEvidenceIn(db, e, /*allow_update=*/false));
    return absl::OkStatus();
  }));
  return o == UpsertOutcome::kAdded;
}

template <typename Db>
absl::StatusOr<std::vector<bool>> SqlCatalogStore<Db>::RecordEvidenceBatch(const std::vector<Evidence>& in) {
  std::vector<bool> added;
  if (in.empty()) return added;
  std::vector<Evidence> rows = in;
  for (auto& e : rows) {
    if (e.evidence_id().empty()) e.set_evidence_id(common::NewId("ev"));
  }
  // What RecordEvidence checks per row, asked once per batch: each stack
  // once, the ids in slices of one query each, then the inserts without
  // waiting on each other (PostgreSQL pipelines them: a pass's launches are
  // a few round trips, not three per row).
  DCU_RETURN_IF_ERROR(db_->Transaction([&](Db& db) -> absl::Status {
    added.assign(rows.size(), false);
    std::set<std::string> stacks;
    for (const auto& e : rows) stacks.insert(e.stack_id());
    for (const auto& id : stacks) {
      DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT 1 FROM stacks WHERE stack_id = ?"));
      q->Bind(1, id);
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) {
        return absl::NotFoundError(absl::StrCat("evidence refers to unknown stack '", id, "'"));
      }
    }
    std::map<std::string, std::string> existing;  // evidence_id -> stored row
    constexpr size_t kSlice = 200;
    for (size_t at = 0; at < rows.size(); at += kSlice) {
      const size_t n = std::min(kSlice, rows.size() - at);
      std::string marks;
      for (size_t i = 0; i < n; ++i) absl::StrAppend(&marks, i ? ", ?" : "?");
      DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(absl::StrCat(
          "SELECT evidence_id, row FROM evidence WHERE evidence_id IN (", marks, ")")));
      for (size_t i = 0; i < n; ++i) q->Bind(static_cast<int>(i + 1), rows[at + i].evidence_id());
      while (true) {
        DCU_ASSIGN_OR_RETURN(bool row, q->Step());
        if (!row) break;
        existing[q->ColumnText(0)] = q->ColumnBlob(1);
      }
    }
    DCU_ASSIGN_OR_RETURN(auto ins, db.Prepare(
        "INSERT INTO evidence(evidence_id, stack_id, arch, model, node, outcome, failure_class, "
        "at_ms, row) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    std::map<std::string, size_t> seen;  // evidence_id -> its row earlier in this batch
    for (size_t i = 0; i < rows.size(); ++i) {
      const Evidence& e = rows[i];
      auto it = existing.find(e.evidence_id());
      auto earlier = seen.find(e.evidence_id());
      if (it != existing.end() || earlier != seen.end()) {
        Evidence old;
        if (it != existing.end()) {
          DCU_ASSIGN_OR_RETURN(old, Decode<Evidence>(it->second, "evidence", e.evidence_id()));
        } else {
          old = rows[earlier->second];
        }
        if (!pb::util::MessageDifferencer::Equals(old, e)) {
          return absl::AlreadyExistsError(absl::StrCat("evidence '", e.evidence_id(), "' exists with other content"));
        }
        continue;  // identical: nothing written
      }
      seen.emplace(e.evidence_id(), i);
      ins->Bind(1, e.evidence_id()).Bind(2, e.stack_id()).Bind(3, e.arch()).Bind(4, e.model())
          .Bind(5, e.node()).Bind(6, OutcomeName(e.outcome())).Bind(7, e.failure_class())
          .Bind(8, e.at_ms()).BindBlob(9, e.SerializeAsString());
      DCU_RETURN_IF_ERROR(ins->Run());
      DCU_RETURN_IF_ERROR(ins->Reset());
      added[i] = true;
    }
    return absl::OkStatus();
  }));
  return added;
}

template <typename Db>
absl::StatusOr<std::vector<Evidence>> SqlCatalogStore<Db>::ListEvidence(const EvidenceFilter& f) {
  std::vector<Evidence> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    std::string sql = absl::StrCat(
        "SELECT evidence_id, row FROM evidence WHERE (?1 = '' OR stack_id = ?1) AND "
        "(?2 = '' OR arch = ?2) AND (?3 = '' OR model = ?3) AND (?4 = '' OR node = ?4) "
        "ORDER BY at_ms ",
        f.newest_first ? "DESC, seq DESC" : "ASC, seq ASC", " LIMIT ?5");
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(sql));
    q->Bind(1, f.stack_id).Bind(2, f.arch).Bind(3, f.model).Bind(4, f.node)
        .Bind(5, f.limit > 0 ? static_cast<int64_t>(f.limit)
                             : std::numeric_limits<int64_t>::max());  // "all", both dialects
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      DCU_ASSIGN_OR_RETURN(Evidence e, Decode<Evidence>(q->ColumnBlob(1), "evidence", q->ColumnText(0)));
      out.push_back(std::move(e));
    }
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<std::vector<Evidence>> SqlCatalogStore<Db>::ListEvidenceRecordedAfter(int64_t* after) {
  std::vector<Evidence> out;
  int64_t last = *after;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT seq, evidence_id, row FROM evidence WHERE seq > ?1 "
                                            "ORDER BY seq ASC"));
    q->Bind(1, *after);
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      DCU_ASSIGN_OR_RETURN(Evidence e, Decode<Evidence>(q->ColumnBlob(2), "evidence", q->ColumnText(1)));
      last = q->ColumnInt(0);
      out.push_back(std::move(e));
    }
    return absl::OkStatus();
  }));
  *after = last;
  return out;
}

template <typename Db>
absl::StatusOr<UpsertOutcome> SqlCatalogStore<Db>::UpsertModel(const ModelEntry& model,
                                                              int64_t now_ms) {
  UpsertOutcome out = UpsertOutcome::kUnchanged;
  DCU_RETURN_IF_ERROR(db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(out, UpsertModelIn(db, model, now_ms));
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<std::vector<ModelEntry>> SqlCatalogStore<Db>::ListModels() {
  std::vector<ModelEntry> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT name, entry FROM models ORDER BY name"));
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      DCU_ASSIGN_OR_RETURN(ModelEntry m, Decode<ModelEntry>(q->ColumnBlob(1), "model", q->ColumnText(0)));
      out.push_back(std::move(m));
    }
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<ModelEntry> SqlCatalogStore<Db>::GetModel(const std::string& name) {
  std::optional<ModelEntry> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT entry FROM models WHERE name = ?"));
    q->Bind(1, name);
    DCU_ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) return absl::OkStatus();
    DCU_ASSIGN_OR_RETURN(ModelEntry m, Decode<ModelEntry>(q->ColumnBlob(0), "model", name));
    out = std::move(m);
    return absl::OkStatus();
  }));
  if (!out) return absl::NotFoundError(absl::StrCat("model '", name, "' not in the catalog"));
  return *std::move(out);
}

template <typename Db>
absl::Status ReplaceNodeModelDirectoriesIn(Db& db, const std::string& node, const std::vector<NodeModelDirectory>& dirs,
                                           int64_t now_ms) {
  if (node.empty()) return absl::InvalidArgumentError("node name is empty");
  DCU_ASSIGN_OR_RETURN(auto del, db.Prepare("DELETE FROM node_model_dirs WHERE node = ?"));
  del->Bind(1, node);
  DCU_RETURN_IF_ERROR(del->Run());
  std::set<std::string> seen;
  DCU_ASSIGN_OR_RETURN(auto ins, db.Prepare(
      "INSERT INTO node_model_dirs(node, path, model, config_sha256, row, seen_at_ms) "
      "VALUES (?, ?, ?, ?, ?, ?)"));
  for (const auto& in : dirs) {
    NodeModelDirectory d = in;
    d.set_node(node);
    d.set_seen_at_ms(now_ms);
    const std::string& path = d.directory().path();
    if (path.empty()) return absl::InvalidArgumentError("model directory without a path");
    if (!seen.insert(path).second) continue;  // the agent listed it twice
    ins->Bind(1, node).Bind(2, path).Bind(3, d.model()).Bind(4, d.directory().config_sha256())
        .BindBlob(5, d.SerializeAsString()).Bind(6, now_ms);
    DCU_RETURN_IF_ERROR(ins->Run());
    DCU_RETURN_IF_ERROR(ins->Reset());
  }
  return absl::OkStatus();
}

// `stacks`: every stack, kept up to date with those this registers.
template <typename Db>
absl::StatusOr<std::vector<NodeEnvironment>> RecordNodeEnvironmentsIn(
    Db& db, std::vector<Stack>& stacks, const std::string& node,
    const std::vector<dcufleet::v1::RuntimeEnvironment>& envs, int64_t now_ms) {
  if (node.empty()) return absl::InvalidArgumentError("node name is empty");
  std::vector<NodeEnvironment> out;
  DCU_ASSIGN_OR_RETURN(auto del, db.Prepare("DELETE FROM node_environments WHERE node = ?"));
  del->Bind(1, node);
  DCU_RETURN_IF_ERROR(del->Run());
  std::set<std::pair<std::string, std::string>> seen;
  DCU_ASSIGN_OR_RETURN(auto ins, db.Prepare(
      "INSERT INTO node_environments(node, kind, location, stack_id, row, seen_at_ms) "
      "VALUES (?, ?, ?, ?, ?, ?)"));
  for (const auto& env : envs) {
    if (!seen.emplace(env.kind(), env.location()).second) continue;
    NodeEnvironment ne;
    ne.set_node(node);
    *ne.mutable_environment() = env;
    ne.set_seen_at_ms(now_ms);
    if (const Stack* known = modelkit::MatchEnvironment(stacks, env)) {
      ne.set_stack_id(known->id());
    } else {
      auto created = modelkit::StackFromEnvironment(env, node, now_ms);
      if (!created.ok()) continue;  // not an engine environment
      DCU_ASSIGN_OR_RETURN(UpsertOutcome o, UpsertStackIn(db, *created, now_ms));
      (void)o;
      stacks.push_back(*created);
      ne.set_stack_id(created->id());
      ne.set_registered_new(true);
    }
    ins->Bind(1, node).Bind(2, env.kind()).Bind(3, env.location()).Bind(4, ne.stack_id())
        .BindBlob(5, ne.SerializeAsString()).Bind(6, now_ms);
    DCU_RETURN_IF_ERROR(ins->Run());
    DCU_RETURN_IF_ERROR(ins->Reset());
    out.push_back(std::move(ne));
  }
  return out;
}

template <typename Db>
absl::Status SqlCatalogStore<Db>::ReplaceNodeModelDirectories(
    const std::string& node, const std::vector<NodeModelDirectory>& dirs, int64_t now_ms) {
  if (node.empty()) return absl::InvalidArgumentError("node name is empty");
  return db_->Transaction(
      [&](Db& db) -> absl::Status { return ReplaceNodeModelDirectoriesIn(db, node, dirs, now_ms); });
}

template <typename Db>
absl::StatusOr<std::vector<std::vector<NodeEnvironment>>> SqlCatalogStore<Db>::RecordNodeObservations(
    const std::vector<NodeObservation>& nodes, int64_t now_ms) {
  std::vector<std::vector<NodeEnvironment>> out;
  if (nodes.empty()) return out;
  DCU_RETURN_IF_ERROR(db_->Transaction([&](Db& db) -> absl::Status {
    out.clear();
    DCU_ASSIGN_OR_RETURN(std::vector<Stack> stacks, ListStacksIn(db));
    for (const auto& n : nodes) {
      DCU_RETURN_IF_ERROR(ReplaceNodeModelDirectoriesIn(db, n.node, n.dirs, now_ms));
      DCU_ASSIGN_OR_RETURN(auto envs, RecordNodeEnvironmentsIn(db, stacks, n.node, n.envs, now_ms));
      out.push_back(std::move(envs));
    }
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<std::vector<NodeModelDirectory>> SqlCatalogStore<Db>::ListNodeModelDirectories(
    const std::string& node) {
  std::vector<NodeModelDirectory> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(
        "SELECT path, row FROM node_model_dirs WHERE (?1 = '' OR node = ?1) ORDER BY node, path"));
    q->Bind(1, node);
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      DCU_ASSIGN_OR_RETURN(NodeModelDirectory d,
                           Decode<NodeModelDirectory>(q->ColumnBlob(1), "model directory", q->ColumnText(0)));
      out.push_back(std::move(d));
    }
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<std::vector<NodeEnvironment>> SqlCatalogStore<Db>::RecordNodeEnvironments(
    const std::string& node, const std::vector<dcufleet::v1::RuntimeEnvironment>& envs,
    int64_t now_ms) {
  if (node.empty()) return absl::InvalidArgumentError("node name is empty");
  std::vector<NodeEnvironment> out;
  DCU_RETURN_IF_ERROR(db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(std::vector<Stack> stacks, ListStacksIn(db));
    DCU_ASSIGN_OR_RETURN(out, RecordNodeEnvironmentsIn(db, stacks, node, envs, now_ms));
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::StatusOr<std::vector<NodeEnvironment>> SqlCatalogStore<Db>::ListNodeEnvironments(
    const std::string& stack_id) {
  std::vector<NodeEnvironment> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare(
        "SELECT location, row FROM node_environments WHERE (?1 = '' OR stack_id = ?1) "
        "ORDER BY node, kind, location"));
    q->Bind(1, stack_id);
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      DCU_ASSIGN_OR_RETURN(NodeEnvironment e,
                           Decode<NodeEnvironment>(q->ColumnBlob(1), "environment", q->ColumnText(0)));
      out.push_back(std::move(e));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dcu::controller
