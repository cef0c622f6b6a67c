#include "controller/core/serving_view.h"

#include <cmath>
#include <string>
#include <unordered_map>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace dcu::controller {
namespace {

// "HOST:PORT" (what the deploy step writes: the node's address, or its name
// when no address is known), "[V6]:PORT" or "http://HOST:PORT/v1"
// -> HOST, PORT. False for anything else.
bool ParseEndpoint(absl::string_view endpoint, std::string* host, int* port) {
  absl::ConsumePrefix(&endpoint, "http://");
  size_t slash = endpoint.find('/');
  absl::string_view hostport = endpoint.substr(0, slash);
  size_t colon = hostport.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return false;
  int p = 0;
  if (!absl::SimpleAtoi(hostport.substr(colon + 1), &p) || p <= 0 || p > 65535) return false;
  absl::string_view h = hostport.substr(0, colon);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  *host = std::string(h);
  *port = p;
  return true;
}

// A node's word about its engines steers every gateway: a value no engine
// reports (negative, not finite, absurd) is dropped rather than believed.
bool Plausible(const dcufleet::v1::EngineLoad& l) {
  auto count = [](double v) { return std::isfinite(v) && v >= 0 && v <= 1e6; };
  return l.scraped_at_ms() > 0 && count(l.running()) && count(l.waiting()) &&
         std::isfinite(l.kv_cache_usage()) && l.kv_cache_usage() >= 0 && l.kv_cache_usage() <= 1;
}

}  // namespace

dcufleet::v1::ServingSnapshot ServingSnapshotOf(
    const std::vector<dcufleet::v1::Deployment>& deployments,
    const std::vector<std::shared_ptr<const dcufleet::v1::NodeView>>& nodes) {
  // The engine load each node's agent scraped, by instance id; a replica
  // without one goes out without load and the gateway judges it by its own
  // in-flight counts.
  std::unordered_map<std::string, const dcufleet::v1::EngineLoad*> loads;
  for (const auto& n : nodes) {
    if (!n) continue;
    for (const auto& i : n->instances()) {
      if (i.has_load() && Plausible(i.load())) loads[i.instance_id()] = &i.load();
    }
  }
  auto load_of = [&](const std::string& instance_id) -> const dcufleet::v1::EngineLoad* {
    auto it = loads.find(instance_id);
    return it == loads.end() ? nullptr : it->second;
  };
  dcufleet::v1::ServingSnapshot snapshot;
  for (const auto& d : deployments) {
    if (d.status().deleted()) continue;
    auto* model = snapshot.add_models();
    model->set_deployment(d.spec().name());
    model->set_served_model_name(d.spec().served_model_name());
    model->set_scaled_to_zero(d.status().scaled_to_zero());
    // One entry per replica that has an endpoint (Ready, or was and is
    // being followed); a deployment none of whose replicas has one is still
    // listed, so that its requests wait in the gateway's queue, not 404.
    auto add = [&](int index, const std::string& endpoint, bool ready, const std::string& node,
                   const std::string& instance_id) {
      std::string host;
      int port = 0;
      if (!ParseEndpoint(endpoint, &host, &port)) return;
      auto* replica = model->add_replicas();
      replica->set_index(index);
      replica->set_host(host);
      replica->set_port(port);
      replica->set_ready(ready);
      replica->set_node(node);
      if (const auto* load = load_of(instance_id)) *replica->mutable_load() = *load;
    };
    if (!d.replicas().empty()) {
      for (const auto& r : d.replicas()) {
        // An unserved replica (leaving a draining node) gets no new requests.
        add(r.index(), r.endpoint(), r.phase() == dcufleet::v1::DEPLOYMENT_READY && !r.unserved(),
            r.node(), r.instance_id());
      }
      continue;
    }
    // A document read without its replica views (one replica).
    const auto& attempts = d.status().attempts();
    add(0, d.status().endpoint(),
        d.status().phase() == dcufleet::v1::DEPLOYMENT_READY && d.status().unserved_at_ms() == 0,
        attempts.empty() ? "" : attempts[attempts.size() - 1].placement().node(),
        attempts.empty() ? "" : attempts[attempts.size() - 1].instance_id());
  }
  return snapshot;
}

}  // namespace dcu::controller
