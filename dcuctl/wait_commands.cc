#include "dcuctl/wait_commands.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/enum_names.h"
#include "dcuctl/deploy_commands.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/object_ref.h"
#include "dcuctl/query.h"

namespace dcu::dcuctl {
namespace {

using FleetStub = dcufleet::v1::FleetService::Stub;

std::string Lower(std::string s) { return absl::AsciiStrToLower(s); }

std::string NodeStateLabel(dcufleet::v1::NodeState s) {
  // "Ready", "NotReady", "Lost" as describe prints them.
  return std::string(common::NodeStateName(s));
}

std::string Seconds(absl::Duration d) { return absl::FormatDuration(d); }

}  // namespace

absl::StatusOr<absl::Duration> ParseWaitDuration(const std::string& text) {
  double seconds = 0;
  if (absl::SimpleAtod(text, &seconds)) {
    if (!(seconds >= 0) || seconds > 1e7) {
      return absl::InvalidArgumentError(absl::StrCat("--timeout '", text, "' is not a duration"));
    }
    return absl::Milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration() || d == absl::InfiniteDuration() ||
      d > absl::Hours(24 * 365)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout '", text, "' is not a duration such as 30s, 5m or 1h"));
  }
  return d;
}

int RunWait(Client& client, const WaitArgs& args, std::ostream& out, std::ostream& err) {
  auto ref = ParseObjectRef(args.object);
  if (!ref.ok()) {
    err << "error: " << ref.status().message() << "\n";
    return kExitUsage;
  }
  auto timeout = ParseWaitDuration(args.timeout);
  if (!timeout.ok()) {
    err << "error: " << timeout.status().message() << "\n";
    return kExitUsage;
  }
  const bool for_delete = args.for_condition == "delete";
  std::string condition;
  if (!for_delete) {
    if (args.for_condition.rfind("condition=", 0) != 0 || args.for_condition.size() == 10) {
      err << "error: --for '" << args.for_condition
          << "' is not 'delete' or 'condition=NAME' (e.g. --for=condition=Ready)\n";
      return kExitUsage;
    }
    condition = args.for_condition.substr(10);
    std::vector<std::string> known;
    if (ref->kind == "deployment") {
      const auto* e = dcufleet::v1::DeploymentPhase_descriptor();
      for (int i = 1; i < e->value_count(); ++i) {
        known.push_back(DeploymentPhaseName(static_cast<dcufleet::v1::DeploymentPhase>(e->value(i)->number())));
      }
    } else {
      for (auto s : {dcufleet::v1::NODE_READY, dcufleet::v1::NODE_NOT_READY, dcufleet::v1::NODE_LOST}) {
        known.push_back(NodeStateLabel(s));
      }
    }
    bool ok = false;
    for (const auto& k : known) {
      if (Lower(k) == Lower(condition)) {
        condition = k;
        ok = true;
      }
    }
    if (!ok) {
      std::string list;
      for (const auto& k : known) absl::StrAppend(&list, list.empty() ? "" : ", ", k);
      err << "error: a " << ref->kind << " has no condition '" << condition << "' (it has " << list
          << ")\n";
      return kExitUsage;
    }
  }
  const std::string object = absl::StrCat(ref->kind, "/", ref->name);
  const std::string what = for_delete ? "to be deleted" : absl::StrCat("for condition ", condition);
  const absl::Time deadline = absl::Now() + *timeout;

  if (ref->kind == "node") {
    // No node stream: the node's state as ListNodes has it, 4 times a second.
    std::string last = "not seen";
    while (true) {
      dcufleet::v1::GetNodeRequest req;
      req.set_name(ref->name);
      dcufleet::v1::NodeView node;
      grpc::Status s = CallFleet(client, &FleetStub::GetNode, req, &node);
      if (s.error_code() == grpc::StatusCode::NOT_FOUND && for_delete) {
        out << object << " deleted\n";
        return kExitOk;
      }
      if (!s.ok()) return client.Fail(s, absl::StrCat("waiting for ", object), err);
      last = absl::StrCat(NodeStateLabel(node.state()),
                          node.state_reason().empty() ? "" : absl::StrCat(": ", node.state_reason()));
      if (!for_delete && NodeStateLabel(node.state()) == condition) {
        out << object << " condition met\n";
        return kExitOk;
      }
      if (absl::Now() >= deadline) break;
      absl::SleepFor(std::min(absl::Milliseconds(250), deadline - absl::Now()));
    }
    err << "error: timed out after " << Seconds(*timeout) << " waiting " << what << " on " << object
        << "; it is " << last << "\n";
    return kExitFailed;
  }

  // A deployment: its WatchDeployment stream, which sends it now and on
  // every change, and ends NOT_FOUND once it is gone.
  dcufleet::v1::WatchDeploymentRequest req;
  req.set_name(ref->name);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  auto reader = client.stub().WatchDeployment(&ctx, req);
  dcufleet::v1::GetDeploymentResponse update;
  bool seen = false;
  std::string last;
  while (reader->Read(&update)) {
    seen = true;
    const auto& d = update.deployment();
    last = absl::StrCat(DeploymentPhaseName(d.status().phase()),
                        d.status().message().empty() ? "" : absl::StrCat(": ", d.status().message()));
    if (!for_delete && DeploymentPhaseName(d.status().phase()) == condition) {
      out << object << " condition met\n";
      ctx.TryCancel();
      reader->Finish();
      return kExitOk;
    }
  }
  grpc::Status s = reader->Finish();
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
    if (for_delete) {
      out << object << (seen ? " deleted" : " does not exist") << "\n";
      return kExitOk;
    }
    err << "error: " << object << (seen ? " was deleted" : " not found") << " while waiting " << what
        << "\n";
    return kExitNotFound;
  }
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && seen) {
    err << "error: timed out after " << Seconds(*timeout) << " waiting " << what << " on " << object
        << "; it is " << last << "\n";
    return kExitFailed;
  }
  if (s.ok()) {
    // The controller ended the stream (it is shutting down).
    err << "error: the controller ended the watch of " << object << "; last seen " << last << "\n";
    return kExitUnreachable;
  }
  return client.Fail(s, absl::StrCat("waiting for ", object), err);
}

}  // namespace dcu::dcuctl
