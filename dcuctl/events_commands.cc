#include "dcuctl/events_commands.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/units.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/object_ref.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"

namespace dcu::dcuctl {

absl::StatusOr<dcufleet::v1::ListEventsRequest> EventsRequestFor(const std::string& for_object) {
  dcufleet::v1::ListEventsRequest req;
  if (for_object.empty()) return req;
  auto ref = ParseObjectRef(for_object);
  if (!ref.ok()) return ref.status();
  req.set_kind(ref->kind);
  req.set_name(ref->name);
  return req;
}

std::optional<dcufleet::v1::ListEventsRequest> EventsRequestOrRefuse(const std::string& for_object,
                                                                     std::ostream& err) {
  auto request = EventsRequestFor(for_object);
  if (!request.ok()) {
    err << "error: --for: " << request.status().message() << "\n";
    return std::nullopt;
  }
  return *std::move(request);
}

std::vector<std::string> EventRow(const dcufleet::v1::ObjectEvent& e, int64_t now_ms) {
  return {common::HumanDuration(std::max<int64_t>(0, now_ms - e.at_ms())), e.type(), e.reason(),
          absl::StrCat(e.kind(), "/", e.name()), e.message()};
}

Table EventsTable(const dcufleet::v1::ListEventsResponse& resp, int64_t now_ms) {
  Table t({"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"});
  for (const auto& e : resp.events()) t.AddRow(EventRow(e, now_ms));
  return t;
}

int RunGetEvents(Client& client, const std::string& for_object, std::ostream& out,
                 std::ostream& err) {
  std::optional<dcufleet::v1::ListEventsRequest> request = EventsRequestOrRefuse(for_object, err);
  if (!request) return kExitUsage;
  const dcufleet::v1::ListEventsRequest& req = *request;
  QueryView<dcufleet::v1::ListEventsResponse> view;
  view.structured = [](const dcufleet::v1::ListEventsResponse& resp) {
    return ProtoToJsonListing(resp, {"events"});
  };
  view.items = "events";
  view.names = [](const dcufleet::v1::ListEventsResponse& resp) {
    std::vector<std::string> names;
    for (const auto& e : resp.events()) names.push_back(absl::StrCat("event/", e.id()));
    return names;
  };
  view.render = [&](const dcufleet::v1::ListEventsResponse& resp, const std::string&) {
    if (resp.events().empty()) {
      err << "No events" << (for_object.empty() ? "" : absl::StrCat(" for ", for_object)) << ".\n";
      return kExitOk;
    }
    EventsTable(resp, absl::ToUnixMillis(absl::Now())).Print(out, !client.options().no_headers);
    return kExitOk;
  };
  return RunQuery(client, &dcufleet::v1::FleetService::Stub::ListEvents, req, "listing events",
                  view, out, err);
}

}  // namespace dcu::dcuctl
