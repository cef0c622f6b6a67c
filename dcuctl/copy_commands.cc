#include "dcuctl/copy_commands.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/transfer_text.h"
#include "common/units.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::dcuctl {

int RunModelCopy(Client& client, const ModelCopyArgs& args, std::ostream& out, std::ostream& err) {
  dcufleet::v1::CopyModelRequest req;
  req.set_model(args.model);
  req.set_to_node(args.to);
  req.set_from_node(args.from);
  req.set_from_dir(args.from_dir);
  // The target's report may still show an earlier copy of the same
  // directory (failed, say): --wait follows only a copy started after it.
  auto last_started = [&](const std::string& dir) -> int64_t {
    dcufleet::v1::GetNodeRequest nreq;
    nreq.set_name(args.to);
    dcufleet::v1::NodeView node;
    if (!CallFleet(client, &dcufleet::v1::FleetService::Stub::GetNode, nreq, &node).ok()) return 0;
    int64_t at = 0;
    for (const auto& t : node.inventory().transfers()) {
      if (dir.empty() || t.model_dir() == dir) at = std::max(at, t.started_at_ms());
    }
    return at;
  };
  const int64_t before = args.wait ? last_started("") : 0;
  dcufleet::v1::CopyModelResponse resp;
  const std::string what = absl::StrCat("copying ", args.model, " to node '", args.to, "'");
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::CopyModel, req, &resp);
  if (!s.ok()) return client.Fail(s, what, err);
  const bool structured = IsStructured(client.options().output);
  if (!structured) {
    out << "node '" << args.to << "' is copying " << resp.model_dir() << " from "
        << (resp.source_node().empty() ? resp.source_address()
                                       : absl::StrCat("node '", resp.source_node(), "' (", resp.source_address(), ")"))
        << "\n"
        << std::flush;
  }
  if (!args.wait) {
    if (structured) PrintStructured(ProtoToJson(resp), client.options().output, out);
    return kExitOk;
  }
  const absl::Time deadline = args.timeout_s > 0 ? absl::Now() + absl::Seconds(args.timeout_s) : absl::InfiniteFuture();
  std::string last_line;
  while (absl::Now() < deadline) {
    dcufleet::v1::GetNodeRequest nreq;
    nreq.set_name(args.to);
    dcufleet::v1::NodeView node;
    grpc::Status ns = CallFleet(client, &dcufleet::v1::FleetService::Stub::GetNode, nreq, &node);
    if (!ns.ok()) return client.Fail(ns, what, err);
    for (const auto& t : node.inventory().transfers()) {
      if (t.model_dir() != resp.model_dir() || t.started_at_ms() <= before) continue;
      std::string line = common::DescribeModelTransfer(t);
      if (t.state() == dcufleet::v1::MODEL_TRANSFER_RUNNING) {
        if (!structured && line != last_line) out << line << "\n" << std::flush;
        last_line = line;
        break;
      }
      if (structured) {
        PrintStructured(ProtoToJson(t), client.options().output, out);
      } else {
        (t.state() == dcufleet::v1::MODEL_TRANSFER_DONE ? out : err) << line << "\n";
      }
      return t.state() == dcufleet::v1::MODEL_TRANSFER_DONE ? kExitOk : kExitFailed;
    }
    absl::SleepFor(absl::Milliseconds(300));
  }
  err << what << ": timed out after " << args.timeout_s << "s (the copy goes on; dcuctl describe node " << args.to
      << " shows it)\n";
  return kExitFailed;
}

}  // namespace dcu::dcuctl
