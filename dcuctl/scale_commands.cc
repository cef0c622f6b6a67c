#include "dcuctl/scale_commands.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/units.h"
#include "dcuctl/deploy_commands.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "dcufleet/v1/fleet.grpc.pb.h"

namespace dcu::dcuctl {
namespace {

using dcufleet::v1::Deployment;
using FleetStub = dcufleet::v1::FleetService::Stub;


// Instances a deployment scaled to zero still has to stop (the replica it
// keeps shows its instance only until that has stopped).
int StillStopping(const Deployment& d) {
  int n = 0;
  for (const auto& r : d.replicas()) n += !r.instance_id().empty();
  return n;
}

// What the rollout waits for, and what ends it early.
enum class Rollout { kDone, kUnschedulable, kFailed, kWaiting };

bool Rolling(const Deployment& d) { return !d.rollout_message().empty(); }

// Replicas removed (a scale-down, a rollout's old ones) whose instances are
// still stopping: as kubectl's "old replicas are pending termination", the
// rollout is not done until they are gone.
int PendingTermination(const Deployment& d) {
  int n = 0;
  for (const auto& r : d.replicas()) n += r.phase() == dcufleet::v1::DEPLOYMENT_DELETING;
  return n;
}

Rollout StateOf(const Deployment& d) {
  if (ScaledToZero(d)) return StillStopping(d) == 0 ? Rollout::kDone : Rollout::kWaiting;
  if (!Rolling(d) && d.ready_replicas() >= DesiredReplicas(d) &&
      d.status().phase() == dcufleet::v1::DEPLOYMENT_READY && PendingTermination(d) == 0) {
    return Rollout::kDone;
  }
  for (const auto& r : d.replicas()) {
    // While a rollout replaces replicas, a new one the fleet has no room
    // for yet is waited for: the controller removes an old one to make room.
    if (r.phase() == dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE && !Rolling(d)) {
      return Rollout::kUnschedulable;
    }
    if (r.phase() == dcufleet::v1::DEPLOYMENT_FAILED) return Rollout::kFailed;
  }
  if (d.replicas().empty()) {
    if (d.status().phase() == dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE) return Rollout::kUnschedulable;
    if (d.status().phase() == dcufleet::v1::DEPLOYMENT_FAILED) return Rollout::kFailed;
  }
  return Rollout::kWaiting;
}

std::string Progress(const Deployment& d) {
  if (ScaledToZero(d)) {
    const int n = StillStopping(d);
    return absl::StrCat("Waiting for deployment \"", d.spec().name(), "\" to scale to zero: ", n,
                        n == 1 ? " instance is" : " instances are", " still stopping...");
  }
  if (Rolling(d)) {
    // kubectl's wording, with the replica that holds the rollout up.
    std::string held;
    for (const auto& r : d.replicas()) {
      if (r.updated() && r.phase() != dcufleet::v1::DEPLOYMENT_READY) {
        held = absl::StrCat(" (replica ", r.index(), ": ", r.message(), ")");
        break;
      }
    }
    return absl::StrCat("Waiting for deployment \"", d.spec().name(), "\" rollout to finish: ",
                        d.updated_replicas(), " out of ", DesiredReplicas(d),
                        " new replicas have been updated, ", d.ready_replicas(), " Ready", held,
                        "...");
  }
  if (const int old = PendingTermination(d); old > 0 && d.ready_replicas() >= DesiredReplicas(d)) {
    return absl::StrCat("Waiting for deployment \"", d.spec().name(), "\" rollout to finish: ", old,
                        old == 1 ? " old replica is" : " old replicas are", " pending termination...");
  }
  return absl::StrCat("Waiting for deployment \"", d.spec().name(), "\" rollout to finish: ",
                      d.ready_replicas(), " of ", DesiredReplicas(d), " replicas are Ready...");
}

}  // namespace

int RunScale(Client& client, const std::string& name, int replicas, bool wait, double timeout_s,
             std::ostream& out, std::ostream& err) {
  dcufleet::v1::ScaleDeploymentRequest req;
  req.set_name(name);
  req.set_replicas(replicas);
  dcufleet::v1::ScaleDeploymentResponse resp;
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::ScaleDeployment, req, &resp);
  if (!s.ok()) return client.Fail(s, absl::StrCat("scaling deployment '", name, "'"), err);
  if (IsStructured(client.options().output)) {
    PrintStructured(ProtoToJson(resp), client.options().output, out);
  } else {
    // Replicas are named by index ("replica 1"), not counted: "adding 1"
    // read as a count.
    auto named = [](const google::protobuf::RepeatedField<int32_t>& indices) {
      return absl::StrCat(indices.size() == 1 ? "replica " : "replicas ",
                          absl::StrJoin(indices, ", "));
    };
    out << "deployment '" << name << "' scaled to " << replicas
        << (replicas == 1 ? " replica" : " replicas");
    if (!resp.added().empty()) out << "; adding " << named(resp.added());
    if (!resp.removed().empty()) {
      out << "; removing " << named(resp.removed())
          << " (worst placed first: not Ready, then the most crowded node)";
    }
    if (replicas == 0 && resp.previous_replicas() > 0) {
      out << "; the deployment stays, with no instance (scale it up to serve again)";
    }
    if (resp.previous_replicas() == replicas) out << " (unchanged)";
    out << "\n";
  }
  if (!wait) return kExitOk;
  RolloutArgs args;
  args.name = name;
  args.timeout_s = timeout_s;
  return RunRolloutStatus(client, args, out, err);
}

namespace {

// "deployment 'x' has no revision 1 (kept: 2, 3, the last the current one)".
std::string NoSuchRevision(const std::string& name, int revision,
                           const std::vector<RolloutRevision>& revisions) {
  std::vector<int> kept;
  for (const auto& r : revisions) kept.push_back(r.revision);
  return absl::StrCat("deployment '", name, "' has no revision ", revision, " (kept: ",
                      absl::StrJoin(kept, ", "), ", the last the current one)");
}

// rollout restart and undo: the deployment as it is now, the spec to roll
// to made from it (`next`: nullopt when there is none, having said why:
// exit 1), deployed, which the controller makes a rollout; `started`
// prints what began. With `wait`, followed as rollout status does.
int RolloutFrom(Client& client, const RolloutArgs& args, bool wait, const std::string& doing,
                const std::function<std::optional<dcufleet::v1::DeploymentSpec>(const Deployment&)>& next,
                const std::function<void(const dcufleet::v1::DeployResponse&)>& started,
                std::ostream& out, std::ostream& err) {
  const std::string what = absl::StrCat(doing, " deployment '", args.name, "'");
  int rc = kExitOk;
  auto current = FetchDeployment(client, args.name, what, err, &rc);
  if (!current) return rc;
  std::optional<dcufleet::v1::DeploymentSpec> spec = next(current->deployment());
  if (!spec) return kExitFailed;
  dcufleet::v1::DeployRequest req;
  *req.mutable_spec() = *std::move(spec);
  dcufleet::v1::DeployResponse resp;
  grpc::Status s = CallFleet(client, &dcufleet::v1::FleetService::Stub::Deploy, req, &resp);
  if (!s.ok()) return client.Fail(s, what, err);
  if (IsStructured(client.options().output)) {
    PrintStructured(ProtoToJson(resp), client.options().output, out);
  } else {
    started(resp);
    // At zero nothing rolls: there is nothing to follow.
    if (!wait && !resp.change().empty() && DesiredReplicas(resp.deployment()) > 0) {
      out << "follow it with: dcuctl rollout status deployment/" << args.name << "\n";
    }
  }
  if (!wait) return kExitOk;
  return RunRolloutStatus(client, args, out, err);
}

}  // namespace

int RunRolloutRestart(Client& client, const RolloutArgs& args, bool wait, std::ostream& out,
                      std::ostream& err) {
  return RolloutFrom(
      client, args, wait, "restarting",
      [](const Deployment& d) -> std::optional<dcufleet::v1::DeploymentSpec> {
        // Its own spec (the one it is rolling to, if it is), with a new
        // restart time: later than the last even if this host's clock is
        // behind.
        dcufleet::v1::DeploymentSpec spec = d.spec();
        const int64_t now_ms = absl::ToUnixMillis(absl::Now());
        spec.set_restarted_at_ms(std::max(now_ms, spec.restarted_at_ms() + 1));
        return spec;
      },
      [&](const dcufleet::v1::DeployResponse& resp) {
        const int n = DesiredReplicas(resp.deployment());
        if (n == 0) {
          out << "deployment \"" << args.name
              << "\" is scaled to zero: nothing runs to restart; replicas it is scaled up to start "
                 "afresh\n";
          return;
        }
        out << "deployment \"" << args.name << "\" restarting: " << n << (n == 1 ? " replica" : " replicas")
            << " replaced one at a time, a new one first while devices allow (none stops serving "
               "before its replacement is Ready)\n";
      },
      out, err);
}

int RunRolloutUndo(Client& client, const RolloutArgs& args, int to_revision, bool wait,
                   std::ostream& out, std::ostream& err) {
  // Set when the deployment already runs the revision asked for: nothing
  // is deployed, as kubectl skips such a rollback.
  std::optional<int> already;
  int not_found = kExitOk;
  const int rc = RolloutFrom(
      client, args, wait, "rolling back",
      [&](const Deployment& d) -> std::optional<dcufleet::v1::DeploymentSpec> {
        dcufleet::v1::DeploymentSpec spec;
        if (to_revision > 0) {
          const std::vector<RolloutRevision> revisions = RevisionsOf(d);
          if (revisions.empty()) {
            err << "error: the controller keeps no numbered revisions of deployment '" << args.name
                << "' (it predates them); rollout undo without --to-revision goes back one\n";
            return std::nullopt;
          }
          auto it = std::find_if(revisions.begin(), revisions.end(),
                                 [&](const RolloutRevision& r) { return r.revision == to_revision; });
          if (it == revisions.end()) {
            err << "error: " << NoSuchRevision(args.name, to_revision, revisions) << "\n"
                << "see: dcuctl rollout history deployment/" << args.name << "\n";
            not_found = kExitNotFound;
            return std::nullopt;
          }
          if (it->current) {
            already = to_revision;
            return std::nullopt;
          }
          spec = it->spec;
        } else {
          if (!d.has_previous_spec()) {
            err << "error: deployment '" << args.name
                << "' has no earlier spec to roll back to: it has not rolled out since it was created\n";
            return std::nullopt;
          }
          spec = d.previous_spec();
        }
        // Back to the old spec, not to the old count: a scale is not a
        // rollout.
        spec.set_replicas(d.spec().replicas());
        return spec;
      },
      [&](const dcufleet::v1::DeployResponse& resp) {
        if (resp.change().empty()) {
          out << "deployment \"" << args.name << "\" already runs its earlier spec (unchanged)\n";
        } else {
          out << "deployment \"" << args.name << "\" rolled back"
              << (to_revision > 0 ? absl::StrCat(" to revision ", to_revision, "'s spec") : "") << " ("
              << resp.change() << ")\n";
        }
      },
      out, err);
  if (already) {
    // Said on stderr under -o json|yaml, whose stdout is for documents.
    (IsStructured(client.options().output) ? err : out)
        << "deployment \"" << args.name << "\" already runs revision " << *already << " (unchanged)\n";
    return kExitOk;
  }
  return not_found != kExitOk ? not_found : rc;
}

int RunRolloutStatus(Client& client, const RolloutArgs& args, std::ostream& out,
                     std::ostream& err) {
  dcufleet::v1::WatchDeploymentRequest req;
  req.set_name(args.name);
  grpc::ClientContext ctx;
  if (args.timeout_s > 0) {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000)));
  }
  // The watch answers at once with the current state, then on each change.
  auto reader = client.stub().WatchDeployment(&ctx, req);
  dcufleet::v1::GetDeploymentResponse update;
  std::string last_line;
  Deployment last;
  bool seen = false;
  while (reader->Read(&update)) {
    last = update.deployment();
    seen = true;
    Rollout state = StateOf(last);
    if (state == Rollout::kWaiting) {
      std::string line = Progress(last);
      if (line != last_line) out << line << "\n" << std::flush;
      last_line = line;
      continue;
    }
    ctx.TryCancel();
    reader->Finish();
    if (state == Rollout::kDone && ScaledToZero(last)) {
      out << "deployment \"" << args.name << "\" scaled to zero (no instance runs)\n";
      return kExitOk;
    }
    if (state == Rollout::kDone) {
      out << "deployment \"" << args.name << "\" successfully rolled out (" << last.ready_replicas()
          << "/" << DesiredReplicas(last) << " replicas Ready)\n";
      return kExitOk;
    }
    for (const auto& r : last.replicas()) {
      if (r.phase() == dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE ||
          r.phase() == dcufleet::v1::DEPLOYMENT_FAILED) {
        err << "replica " << r.index() << " of deployment '" << args.name << "' "
            << (r.phase() == dcufleet::v1::DEPLOYMENT_FAILED ? "failed" : "cannot be scheduled")
            << ": " << r.message() << "\n";
      }
    }
    err << "see: dcuctl describe deployment " << args.name << "\n";
    return state == Rollout::kUnschedulable ? kExitUnschedulable : kExitDeployFailed;
  }
  grpc::Status fs = reader->Finish();
  if (fs.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    err << "timed out after " << args.timeout_s << "s waiting for deployment '" << args.name
        << "'" << (seen ? absl::StrCat(": ", last.ready_replicas(), " of ", DesiredReplicas(last),
                                       " replicas Ready; ", last.status().message())
                        : "")
        << "\n";
    return kExitFailed;
  }
  if (!fs.ok()) return client.Fail(fs, absl::StrCat("watching deployment '", args.name, "'"), err);
  return kExitFailed;
}

std::vector<RolloutRevision> RevisionsOf(const Deployment& d) {
  std::vector<RolloutRevision> out;
  // Filled on read by a controller that keeps revisions; an older one
  // sends none.
  if (!d.has_current_revision()) return out;
  for (const auto& r : d.revision_history()) {
    out.push_back({r.number(), r.since_ms(), r.change(), r.spec(), false});
  }
  const auto& c = d.current_revision();
  out.push_back({c.number(), c.since_ms(), c.change(), d.spec(), true});
  return out;
}

int RunRolloutHistory(Client& client, const std::string& name, int revision, std::ostream& out,
                      std::ostream& err) {
  int rc = kExitOk;
  auto deployment =
      FetchDeployment(client, name, absl::StrCat("reading the history of deployment '", name, "'"), err, &rc);
  if (!deployment) return rc;
  const std::vector<RolloutRevision> revisions = RevisionsOf(deployment->deployment());
  if (revisions.empty()) {
    err << "error: the controller keeps no numbered revisions of deployment '" << name
        << "' (it predates them); see its events: dcuctl get events --for deployment/" << name << "\n";
    return kExitFailed;
  }
  const std::string& fmt = client.options().output;
  auto as_json = [](const RolloutRevision& r) {
    nlohmann::json j = {{"revision", r.revision}, {"at", r.at_ms > 0 ? nlohmann::json(Rfc3339(r.at_ms)) : nlohmann::json()},
                        {"change", r.change}, {"current", r.current}};
    j["spec"] = ProtoToJson(r.spec);
    return j;
  };
  if (revision > 0) {
    auto it = std::find_if(revisions.begin(), revisions.end(),
                           [&](const RolloutRevision& r) { return r.revision == revision; });
    if (it == revisions.end()) {
      err << "error: " << NoSuchRevision(name, revision, revisions) << "\n";
      return kExitNotFound;
    }
    if (IsStructured(fmt)) return PrintDocument(as_json(*it), fmt, out, err);
    out << "deployment/" << name << " with revision #" << it->revision << (it->current ? " (current)" : "")
        << "\n";
    out << "Change: " << it->change << "\n";
    if (it->at_ms > 0) out << "Since:  " << Rfc3339(it->at_ms) << "\n";
    out << "Spec:\n";
    std::ostringstream spec;
    PrintStructured(ProtoToJson(it->spec), "yaml", spec);
    for (absl::string_view line : absl::StrSplit(spec.str(), '\n', absl::SkipEmpty())) {
      out << "  " << line << "\n";
    }
    return kExitOk;
  }
  if (IsStructured(fmt)) {
    nlohmann::json doc = {{"deployment", name}, {"current", revisions.back().revision},
                          {"revisions", nlohmann::json::array()}};
    for (const auto& r : revisions) doc["revisions"].push_back(as_json(r));
    return PrintDocument(doc, fmt, out, err);
  }
  out << "deployment/" << name << "\n";
  Table t({"REVISION", "AGE", "CHANGE"});
  const int64_t now = absl::ToUnixMillis(absl::Now());
  for (const auto& r : revisions) {
    t.AddRow({absl::StrCat(r.revision, r.current ? " (current)" : ""),
              r.at_ms > 0 ? common::HumanDuration(std::max<int64_t>(0, now - r.at_ms)) : "-", r.change});
  }
  t.Print(out, true);
  if (revisions.size() > 1) {
    out << "rollout undo goes back to revision " << revisions[revisions.size() - 2].revision
        << "'s spec, --to-revision=N to any listed (the newest 10 earlier ones are kept); "
           "--revision=N shows one's spec\n";
  }
  return kExitOk;
}

}  // namespace dcu::dcuctl
