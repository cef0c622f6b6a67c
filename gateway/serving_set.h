#pragma once

#include <memory>

#include "gateway/api_keys.h"

#include <cstdint>
#include <string>
#include <vector>

// What the gateway serves: models, each with its replicas and the load their
// engines last reported. Filled by a ReplicaSource (a file, the controller),
// read by the router and the picker. Plain data, no sockets.
namespace dcu::gateway {

// The engine's own view of its load (vLLM's /metrics), as scraped by the
// agent (or the gateway) at scraped_at_ms (Unix ms; 0 = never scraped).
struct EngineLoad {
  double running = 0;         // vllm:num_requests_running
  double waiting = 0;         // vllm:num_requests_waiting
  double kv_cache_usage = 0;  // vllm:kv_cache_usage_perc, 0..1
  int64_t scraped_at_ms = 0;
};

struct Replica {
  int index = 0;
  std::string node;
  std::string host;
  int port = 0;
  bool ready = false;
  EngineLoad load;

  // The picker's identity of a replica: stable across snapshots.
  std::string Key() const { return host + ":" + std::to_string(port); }
};

struct ServedModel {
  std::string deployment;         // the deployment's name
  std::string served_model_name;  // what the engine answers to ("" = the deployment name)
  std::vector<Replica> replicas;
  // Scaled to zero by a person: no replica is coming, so a request is
  // refused at once instead of waiting in the queue.
  bool scaled_to_zero = false;

  // The name the engine expects in the request's "model".
  const std::string& EngineModelName() const {
    return served_model_name.empty() ? deployment : served_model_name;
  }
  bool AnyReady() const {
    for (const auto& r : replicas) {
      if (r.ready) return true;
    }
    return false;
  }
};

struct ServingSet {
  int64_t revision = 0;
  std::vector<ServedModel> models;
  // The API keys the controller manages (dcuctl apikey); nullptr when it
  // manages none. While set, every request needs a key.
  std::shared_ptr<const ApiKeyStore> managed_keys;
};

}  // namespace dcu::gateway
