#pragma once

// The shape most read-only dcuctl commands share: one unary FleetService call
// under the client's deadline; a failure becomes Client::Fail's one line and
// exit code; a success prints as -o json|yaml (the response proto, or a view
// of it) or through the command's own table/description renderer.

#include <functional>
#include <initializer_list>
#include <ostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <iostream>

#include "dcuctl/client.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::dcuctl {

// A unary FleetService method: &dcufleet::v1::FleetService::Stub::ListNodes.
template <typename Request, typename Response>
using FleetRpc = grpc::Status (dcufleet::v1::FleetService::Stub::*)(grpc::ClientContext*,
                                                                    const Request&, Response*);

// True for the -o values printed from JSON ("json", "yaml", "jsonpath=...");
// the others ("table", "wide", "name") go to a renderer.
inline bool IsStructured(const std::string& format) { return IsDocumentFormat(format); }

// Calls `rpc` with the client's deadline.
template <typename Request, typename Response>
grpc::Status CallFleet(Client& client, FleetRpc<Request, Response> rpc, const Request& request,
                       Response* response) {
  auto ctx = client.Context();
  return (client.stub().*rpc)(ctx.get(), request, response);
}

// GetDeployment of `name` for a command that then works on it (edit,
// rollout restart/undo/history): the answer, or nullopt after
// Client::Fail's line on `err` ("<what>: …") with its exit code in `*rc`.
inline std::optional<dcufleet::v1::GetDeploymentResponse> FetchDeployment(Client& client,
                                                                        const std::string& name,
                                                                        const std::string& what,
                                                                        std::ostream& err, int* rc) {
  dcufleet::v1::GetDeploymentRequest req;
  req.set_name(name);
  dcufleet::v1::GetDeploymentResponse resp;
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::GetDeployment, req, &resp);
  if (!s.ok()) {
    *rc = client.Fail(s, what, err);
    return std::nullopt;
  }
  return resp;
}

// ProtoToJson(message), with each named repeated field present as [] when
// empty (proto JSON omits empty lists; scripts index "nodes" unconditionally).
inline nlohmann::json ProtoToJsonListing(const google::protobuf::Message& message,
                                         std::initializer_list<const char*> lists) {
  nlohmann::json j = ProtoToJson(message);
  for (const char* name : lists) {
    if (!j.contains(name)) j[name] = nlohmann::json::array();
  }
  return j;
}

// How a query's successful response is shown.
template <typename Response>
struct QueryView {
  // -o table|wide: writes the response and returns the exit code.
  std::function<int(const Response&, const std::string& format)> render;
  // -o json|yaml|jsonpath: what is printed; the whole response proto when unset.
  std::function<nlohmann::json(const Response&)> structured;
  // -o name: "KIND/NAME" of each object shown; unset: the command has no -o name.
  std::function<std::vector<std::string>(const Response&)> names;
  // A listing's field that -o jsonpath also offers as "items", as kubectl's
  // lists have it ({.items[*].spec.name}); empty for one object.
  std::string items;
};

// Prints a successful response in the client's -o format.
template <typename Response>
int ShowResponse(const Client& client, const Response& response, const QueryView<Response>& view,
                 std::ostream& out, std::ostream& err = std::cerr) {
  const std::string& format = client.options().output;
  if (IsStructured(format)) {
    nlohmann::json doc = view.structured ? view.structured(response) : ProtoToJson(response);
    if (format.rfind("jsonpath=", 0) == 0 && !view.items.empty() && doc.is_object() &&
        doc.contains(view.items) && !doc.contains("items")) {
      doc["items"] = doc[view.items];
    }
    return PrintDocument(doc, format, out, err);
  }
  if (format == "name") {
    if (!view.names) {
      err << "error: -o name is for 'dcuctl get'; use -o json or -o jsonpath=... here\n";
      return kExitUsage;
    }
    for (const auto& n : view.names(response)) out << n << "\n";
    return kExitOk;
  }
  return view.render(response, format);
}

// CallFleet, then Client::Fail(status, `what`) on an error or ShowResponse.
// `what` names the action for error lines: "listing nodes".
template <typename Request, typename Response>
int RunQuery(Client& client, FleetRpc<Request, Response> rpc, const Request& request,
             const std::string& what, const QueryView<Response>& view, std::ostream& out,
             std::ostream& err) {
  Response response;
  grpc::Status s = CallFleet(client, rpc, request, &response);
  if (!s.ok()) return client.Fail(s, what, err);
  return ShowResponse(client, response, view, out, err);
}

}  // namespace dcu::dcuctl
