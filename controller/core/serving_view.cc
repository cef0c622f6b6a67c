#include "controller/core/serving_view.h"

#include <string>

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

}  // namespace

dcufleet::v1::ServingSnapshot ServingSnapshotOf(
    const std::vector<dcufleet::v1::Deployment>& deployments,
    const std::vector<std::shared_ptr<const dcufleet::v1::NodeView>>& nodes) {
  // Nodes will carry the engine load their agents scrape; until they do,
  // replicas go out without load and the gateway judges by its own counts.
  (void)nodes;
  dcufleet::v1::ServingSnapshot snapshot;
  for (const auto& d : deployments) {
    if (d.status().deleted()) continue;
    auto* model = snapshot.add_models();
    model->set_deployment(d.spec().name());
    model->set_served_model_name(d.spec().served_model_name());
    // One entry per replica that has an endpoint (Ready, or was and is
    // being followed); a deployment none of whose replicas has one is still
    // listed, so that its requests wait in the gateway's queue, not 404.
    auto add = [&](int index, const std::string& endpoint, bool ready, const std::string& node) {
      std::string host;
      int port = 0;
      if (!ParseEndpoint(endpoint, &host, &port)) return;
      auto* replica = model->add_replicas();
      replica->set_index(index);
      replica->set_host(host);
      replica->set_port(port);
      replica->set_ready(ready);
      replica->set_node(node);
    };
    if (!d.replicas().empty()) {
      for (const auto& r : d.replicas()) {
        add(r.index(), r.endpoint(), r.phase() == dcufleet::v1::DEPLOYMENT_READY, r.node());
      }
      continue;
    }
    // A document read without its replica views (one replica).
    add(0, d.status().endpoint(), d.status().phase() == dcufleet::v1::DEPLOYMENT_READY,
        d.status().attempts_size() > 0
            ? d.status().attempts(d.status().attempts_size() - 1).placement().node()
            : "");
  }
  return snapshot;
}

}  // namespace dcu::controller
