// Definitions of SqlDeploymentStore<Db> (sql_deployment_store.h), included only by the files that
// instantiate it for one database: sqlite_deployment_store.cc and pg_deployment_store.cc.
#pragma once

#include "controller/store/sql_deployment_store.h"

#include "absl/strings/str_cat.h"
#include "common/legacy_fields.h"
#include "common/status_util.h"

namespace dcu::controller {
namespace {

constexpr char kPutDeployment[] =
    "INSERT INTO deployments(name, model, phase, revision, doc, created_at_ms, updated_at_ms) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET model = excluded.model, "
    "phase = excluded.phase, revision = excluded.revision, doc = excluded.doc, "
    "updated_at_ms = excluded.updated_at_ms";

// `st` is kPutDeployment, prepared once per transaction.
template <typename Statement>
absl::Status PutLocked(Statement& st, const dcufleet::v1::Deployment& d) {
  st.Bind(1, ReplicaKey(d)).Bind(2, d.spec().model())
      .Bind(3, dcufleet::v1::DeploymentPhase_Name(d.status().phase()))
      .Bind(4, d.revision()).BindBlob(5, d.SerializeAsString())
      .Bind(6, d.status().created_at_ms()).Bind(7, d.status().updated_at_ms());
  DCU_RETURN_IF_ERROR(st.Run());
  return st.Reset();
}

}  // namespace

template <typename Db>
absl::Status SqlDeploymentStore<Db>::PutDeployment(const dcufleet::v1::Deployment& d) {
  return db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto st, db.Prepare(kPutDeployment));
    return PutLocked(*st, d);
  });
}

template <typename Db>
absl::Status SqlDeploymentStore<Db>::PutDeployments(
    const std::vector<dcufleet::v1::Deployment>& ds) {
  if (ds.empty()) return absl::OkStatus();
  return db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto st, db.Prepare(kPutDeployment));
    for (const auto& d : ds) DCU_RETURN_IF_ERROR(PutLocked(*st, d));
    return absl::OkStatus();
  });
}

template <typename Db>
absl::Status SqlDeploymentStore<Db>::DeleteDeployments(const std::vector<std::string>& keys) {
  if (keys.empty()) return absl::OkStatus();
  return db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto st, db.Prepare("DELETE FROM deployments WHERE name = ?"));
    for (const std::string& key : keys) {
      st->Bind(1, key);
      DCU_RETURN_IF_ERROR(st->Run());
      DCU_RETURN_IF_ERROR(st->Reset());
    }
    return absl::OkStatus();
  });
}

template <typename Db>
absl::StatusOr<std::vector<dcufleet::v1::Deployment>> SqlDeploymentStore<Db>::ListDeployments() {
  std::vector<dcufleet::v1::Deployment> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT name, doc FROM deployments ORDER BY name"));
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      dcufleet::v1::Deployment d;
      if (!d.ParseFromString(q->ColumnBlob(1))) {
        return absl::DataLossError(
            absl::StrCat("deployment '", q->ColumnText(0), "': stored document does not parse"));
      }
      // Documents written before runtime kinds, verdicts and severities were
      // enums hold them as strings (common/legacy_fields.h).
      common::UpgradeLegacyFields(&d);
      out.push_back(std::move(d));
    }
    return absl::OkStatus();
  }));
  return out;
}

namespace {
constexpr char kPutGeneration[] =
    "INSERT INTO node_generations(node, generation) VALUES (?, ?) "
    "ON CONFLICT(node) DO UPDATE SET generation = CASE WHEN excluded.generation > "
    "node_generations.generation THEN excluded.generation ELSE node_generations.generation END";
}  // namespace

template <typename Db>
absl::Status SqlDeploymentStore<Db>::PutNodeGeneration(const std::string& node, int64_t gen) {
  return db_->Write([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto st, db.Prepare(kPutGeneration));
    st->Bind(1, node).Bind(2, gen);
    return st->Run();
  });
}

template <typename Db>
absl::Status SqlDeploymentStore<Db>::PutNodeGenerations(
    const std::vector<std::pair<std::string, int64_t>>& generations) {
  if (generations.empty()) return absl::OkStatus();
  return db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto st, db.Prepare(kPutGeneration));
    for (const auto& [node, gen] : generations) {
      st->Bind(1, node).Bind(2, gen);
      DCU_RETURN_IF_ERROR(st->Run());
      DCU_RETURN_IF_ERROR(st->Reset());
    }
    return absl::OkStatus();
  });
}

template <typename Db>
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>>
SqlDeploymentStore<Db>::ListNodeGenerations() {
  std::vector<std::pair<std::string, int64_t>> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto q, db.Prepare("SELECT node, generation FROM node_generations"));
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      out.emplace_back(q->ColumnText(0), q->ColumnInt(1));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace dcu::controller
