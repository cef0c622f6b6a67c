#include "gateway/file_replica_source.h"

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"

namespace dcu::gateway {

absl::StatusOr<ServingSet> ParseReplicasJson(const std::string& text) {
  using nlohmann::json;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not valid JSON");
  if (!j.is_object() || !j.contains("models") || !j["models"].is_array()) {
    return absl::InvalidArgumentError("want an object with a \"models\" array");
  }
  ServingSet set;
  set.revision = j.value("revision", 0);
  for (size_t i = 0; i < j["models"].size(); ++i) {
    const json& m = j["models"][i];
    std::string where = absl::StrCat("models[", i, "]");
    if (!m.is_object() || !m.contains("deployment") || !m["deployment"].is_string() ||
        m["deployment"].get<std::string>().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": \"deployment\" must be a name"));
    }
    ServedModel model;
    model.deployment = m["deployment"];
    if (m.contains("served_model_name")) {
      if (!m["served_model_name"].is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ".served_model_name: not a string"));
      }
      model.served_model_name = m["served_model_name"];
    }
    if (m.contains("replicas") && !m["replicas"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".replicas: not an array"));
    }
    int index = 0;
    for (const json& r : m.value("replicas", json::array())) {
      std::string rw = absl::StrCat(where, ".replicas[", index, "]");
      if (!r.is_object() || !r.contains("host") || !r["host"].is_string() ||
          !r.contains("port") || !r["port"].is_number_integer()) {
        return absl::InvalidArgumentError(absl::StrCat(rw, ": want \"host\" and \"port\""));
      }
      Replica rep;
      rep.index = r.value("index", index);
      rep.host = r["host"];
      rep.port = r["port"];
      if (rep.port <= 0 || rep.port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat(rw, ".port: ", rep.port, " is not a port"));
      }
      rep.node = r.value("node", std::string());
      rep.ready = r.value("ready", true);
      model.replicas.push_back(std::move(rep));
      ++index;
    }
    set.models.push_back(std::move(model));
  }
  return set;
}

absl::StatusOr<ServingSet> FileReplicaSource::Read(std::string* fingerprint) const {
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("replicas file '", path_, "' does not exist"));
  }
  *fingerprint = absl::StrCat(st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, "/", st.st_size);
  std::ifstream in(path_);
  std::stringstream ss;
  ss << in.rdbuf();
  auto set = ParseReplicasJson(ss.str());
  if (!set.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas file '", path_, "': ", set.status().message()));
  }
  return set;
}

absl::Status FileReplicaSource::Start(UpdateFn on_update) {
  std::string fingerprint;
  auto first = Read(&fingerprint);
  if (!first.ok()) return first.status();
  on_update(*std::move(first));
  watcher_ = std::thread([this, on_update, fingerprint]() mutable {
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::string now_fp;
      struct stat st {};
      if (stat(path_.c_str(), &st) != 0) continue;  // mid-rename: keep the last set
      auto set = Read(&now_fp);
      if (now_fp == fingerprint) continue;
      fingerprint = now_fp;
      if (!set.ok()) {
        DCU_LOG_WARN(set.status().message(), "; keeping the previous replicas");
        continue;
      }
      on_update(*std::move(set));
    }
  });
  return absl::OkStatus();
}

void FileReplicaSource::Stop() {
  stop_.store(true);
  if (watcher_.joinable()) watcher_.join();
}

}  // namespace dcu::gateway
