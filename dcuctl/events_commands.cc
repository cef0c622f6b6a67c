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

int RunGetEvents(Client& client, const std::string& for_object, std::ostream& out,
                 std::ostream& err) {
  dcufleet::v1::ListEventsRequest req;
  if (!for_object.empty()) {
    auto ref = ParseObjectRef(for_object);
    if (!ref.ok()) {
      err << "error: --for: " << ref.status().message() << "\n";
      return kExitUsage;
    }
    req.set_kind(ref->kind);
    req.set_name(ref->name);
  }
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
    const int64_t now = absl::ToUnixMillis(absl::Now());
    Table t({"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"});
    for (const auto& e : resp.events()) {
      t.AddRow({common::HumanDuration(std::max<int64_t>(0, now - e.at_ms())), e.type(), e.reason(),
                absl::StrCat(e.kind(), "/", e.name()), e.message()});
    }
    t.Print(out, !client.options().no_headers);
    return kExitOk;
  };
  return RunQuery(client, &dcufleet::v1::FleetService::Stub::ListEvents, req, "listing events",
                  view, out, err);
}

}  // namespace dcu::dcuctl
