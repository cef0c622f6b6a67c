// Definitions of SqlApiKeyStore<Db> (sql_api_key_store.h), included only by the files that
// instantiate it for one database: sqlite_api_key_store.cc and pg_api_key_store.cc.
#pragma once

#include "controller/store/sql_api_key_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_util.h"

namespace dcu::controller {

template <typename Db>
absl::Status SqlApiKeyStore<Db>::CreateApiKey(const dcufleet::v1::ApiKey& key) {
  const std::string scope = key.all_models() ? "*" : absl::StrJoin(key.models(), ",");
  return db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto taken, db.Prepare("SELECT 1 FROM api_keys WHERE name = ?"));
    taken->Bind(1, key.name());
    DCU_ASSIGN_OR_RETURN(bool exists, taken->Step());
    if (exists) {
      return absl::AlreadyExistsError(absl::StrCat(
          "API key '", key.name(), "' exists; revoke it first (dcuctl apikey revoke ", key.name(),
          ") or pick another name"));
    }
    DCU_ASSIGN_OR_RETURN(auto st, db.Prepare("INSERT INTO api_keys(name, sha256_hex, scope, "
                                             "created_at_ms) VALUES (?, ?, ?, ?)"));
    st->Bind(1, key.name()).Bind(2, key.sha256_hex()).Bind(3, scope).Bind(4, key.created_at_ms());
    return st->Run();
  });
}

template <typename Db>
absl::StatusOr<std::vector<dcufleet::v1::ApiKey>> SqlApiKeyStore<Db>::ListApiKeys() {
  std::vector<dcufleet::v1::ApiKey> out;
  DCU_RETURN_IF_ERROR(db_->WithConnection([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(
        auto q, db.Prepare("SELECT name, sha256_hex, scope, created_at_ms FROM api_keys "
                           "ORDER BY name"));
    while (true) {
      DCU_ASSIGN_OR_RETURN(bool row, q->Step());
      if (!row) break;
      dcufleet::v1::ApiKey& k = out.emplace_back();
      k.set_name(q->ColumnText(0));
      k.set_sha256_hex(q->ColumnText(1));
      const std::string scope = q->ColumnText(2);
      if (scope == "*") {
        k.set_all_models(true);
      } else {
        for (absl::string_view m : absl::StrSplit(scope, ',', absl::SkipEmpty())) {
          k.add_models(std::string(m));
        }
      }
      k.set_created_at_ms(q->ColumnInt(3));
    }
    return absl::OkStatus();
  }));
  return out;
}

template <typename Db>
absl::Status SqlApiKeyStore<Db>::RevokeApiKey(const std::string& name) {
  return db_->Transaction([&](Db& db) -> absl::Status {
    DCU_ASSIGN_OR_RETURN(auto taken, db.Prepare("SELECT 1 FROM api_keys WHERE name = ?"));
    taken->Bind(1, name);
    DCU_ASSIGN_OR_RETURN(bool exists, taken->Step());
    if (!exists) {
      return absl::NotFoundError(
          absl::StrCat("no API key '", name, "' (dcuctl apikey list shows them)"));
    }
    DCU_ASSIGN_OR_RETURN(auto st, db.Prepare("DELETE FROM api_keys WHERE name = ?"));
    st->Bind(1, name);
    return st->Run();
  });
}

}  // namespace dcu::controller
