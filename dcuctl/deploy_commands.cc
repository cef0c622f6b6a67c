#include "dcuctl/deploy_commands.h"

#include "dcuctl/startup_view.h"
#include "dcuctl/terminal_safe.h"

#include <sstream>

#include <unistd.h>

#include <cstdio>
#include <deque>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/redraw.h"
#include "common/deployment_rules.h"
#include "common/enum_names.h"
#include "google/protobuf/util/json_util.h"
#include "common/units.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/memory_plan.h"

namespace dcu::dcuctl {
namespace {

using dcufleet::v1::Deployment;
using dcufleet::v1::DeploymentPhase;
using FleetStub = dcufleet::v1::FleetService::Stub;

std::string Phase(DeploymentPhase p) {
  std::string s = dcufleet::v1::DeploymentPhase_Name(p);
  if (s.rfind("DEPLOYMENT_", 0) == 0) s = s.substr(11);
  std::string out;
  bool up = true;
  for (char c : s) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? c : static_cast<char>(std::tolower(c));
    up = false;
  }
  return out;
}

std::string InstPhase(dcufleet::v1::InstancePhase p) {
  std::string s = dcufleet::v1::InstancePhase_Name(p);
  if (s.rfind("INSTANCE_", 0) == 0) s = s.substr(9);
  for (size_t i = 1; i < s.size(); ++i) s[i] = static_cast<char>(std::tolower(s[i]));
  return s;
}

std::string Clock(int64_t ms) {
  return absl::FormatTime("%H:%M:%S", absl::FromUnixMillis(ms), absl::LocalTimeZone());
}

const dcufleet::v1::Attempt* LastAttempt(const Deployment& d) {
  return d.status().attempts().empty() ? nullptr
                                       : &d.status().attempts(d.status().attempts_size() - 1);
}

int ExitFor(const Deployment& d) {
  switch (d.status().phase()) {
    case dcufleet::v1::DEPLOYMENT_READY:
    case dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO:  // what was asked for
      return kExitOk;
    case dcufleet::v1::DEPLOYMENT_UNSCHEDULABLE:
      // A rollout's new replica waits for the room an old one leaves.
      if (!d.rollout_message().empty()) return -1;
      return kExitUnschedulable;
    case dcufleet::v1::DEPLOYMENT_FAILED:
      return kExitDeployFailed;
    default:
      return -1;
  }
}

void PrintRejections(const Deployment& d, std::ostream& out) {
  for (const auto& r : d.status().rejections()) out << "  " << r.node() << ": " << r.reason() << "\n";
}

std::string Bar(int done, int total, int width = 30) {
  if (total <= 0) return "";
  int filled = width * done / total;
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '.'), "] ", done,
                      "/", total);
}

}  // namespace

bool ScaledToZero(const Deployment& d) {
  return d.status().phase() == dcufleet::v1::DEPLOYMENT_SCALED_TO_ZERO;
}

int DesiredReplicas(const Deployment& d) { return ScaledToZero(d) ? 0 : std::max(1, d.spec().replicas()); }

std::vector<std::string> DeploymentRow(const Deployment& d, bool wide) {
  const auto* a = LastAttempt(d);
  // READY n/m over replicas; RESTARTS summed over them; NODE and STACK of
  // the replica the row speaks for (the one needing attention), "+K" for
  // the nodes of the others.
  // Scaled to zero: no node once its instance has stopped.
  const bool at_zero = ScaledToZero(d);
  const int desired = DesiredReplicas(d);
  int restarts = 0;
  std::set<std::string> nodes;
  std::vector<std::string> endpoints;
  for (const auto& r : d.replicas()) {
    restarts += r.restarts();
    if (!r.node().empty()) nodes.insert(r.node());
    if (!r.endpoint().empty()) endpoints.push_back(r.endpoint());
  }
  if (d.replicas().empty()) {
    restarts = std::max(0, d.status().attempts_size() - 1);
    if (!d.status().endpoint().empty()) endpoints.push_back(d.status().endpoint());
  }
  std::string node = a && !(at_zero && nodes.empty()) ? a->placement().node() : "-";
  if (nodes.size() > 1) absl::StrAppend(&node, " +", nodes.size() - 1);
  std::vector<std::string> row = {
      d.spec().name(), absl::StrCat(d.ready_replicas(), "/", desired), Phase(d.status().phase()),
      d.spec().model(), node, a ? a->stack_id() : "-",
      a ? absl::StrCat(a->placement().tp()) : (d.spec().tp() ? absl::StrCat(d.spec().tp()) : "auto"),
      absl::StrCat(restarts), Age(d.status().created_at_ms())};
  if (wide) {
    row.push_back(endpoints.empty() ? "-" : absl::StrJoin(endpoints, ","));
    row.push_back(d.status().message());
  }
  return row;
}

Table DeploymentsTable(const dcufleet::v1::ListDeploymentsResponse& resp, bool wide) {
  // kubectl's columns: READY (serving instances / wanted), RESTARTS
  // (launches after the first), AGE; -o wide adds where it serves.
  std::vector<std::string> header = {"NAME",  "READY", "PHASE",    "MODEL",   "NODE",
                                     "STACK", "TP",    "RESTARTS", "AGE"};
  if (wide) {
    header.push_back("ENDPOINT");
    header.push_back("MESSAGE");
  }
  Table t(header);
  for (const auto& d : resp.deployments()) t.AddRow(DeploymentRow(d, wide));
  return t;
}

std::string DeploymentPhaseName(DeploymentPhase p) { return Phase(p); }

std::vector<std::string> UnschedulableHints(const Deployment& d) {
  // One hint per cause the nodes gave, in the order first seen: a model
  // missing from the node wants a copy, not a reap.
  struct Cause {
    std::vector<const char*> words;
    std::string hint;
  };
  const std::string& model = d.spec().model();
  const std::vector<Cause> causes = {
      {{"model not on the node", "model directory", "model roots"},
       absl::StrCat("put ", model, " under a node's --model-root (dcuctl get models shows which "
                    "nodes have it)")},
      {{"not Ready", "NotReady", "Lost"},
       "bring the node's agent back (dcuctl get nodes; dcuctl describe node NODE)"},
      {{"unreclaimed", "leftover", "usable devices", "devices have", "held by"},
       "free devices: dcuctl node reap NODE --dry-run, then without --dry-run"},
      {{"no usable stack installed", "not installed"},
       "install a stack's env or image on the node (dcuctl get stacks --arch ARCH lists them)"},
      {{"no known stack", "no working stack"},
       "no stack is known to work on that arch: dcuctl get stacks --arch ARCH, or dcuctl stack "
       "import"},
      {{"no TP fits"},
       "ask for less memory (--max-model-len, --gpu-memory-utilization) or another --tp"},
  };
  std::vector<std::string> out;
  std::vector<bool> used(causes.size(), false);
  for (const auto& r : d.status().rejections()) {
    for (size_t i = 0; i < causes.size(); ++i) {
      if (used[i]) continue;
      for (const char* w : causes[i].words) {
        if (absl::StrContains(r.reason(), w)) {
          used[i] = true;
          out.push_back(causes[i].hint);
          break;
        }
      }
    }
  }
  if (out.empty()) {
    out.push_back("free devices (dcuctl node reap NODE), add nodes, or change --tp/--node/--stack");
  }
  return out;
}


void PrintPlan(const Deployment& d, std::ostream& out) {
  const auto& st = d.status();
  // The verdicts are those of the last placement's ranking: a stack shown
  // "untested" there may be serving now, which the running attempt's mark
  // says (get stacks shows the matrix as it is now).
  out << "Plans (as ranked at the last placement, in the order they would be tried):\n";
  if (st.plans().empty()) out << "  none\n";
  const auto* latest = LastAttempt(d);
  bool marked = false;
  for (int i = 0; i < st.plans_size(); ++i) {
    const auto& p = st.plans(i);
    out << "  " << (i + 1) << ". " << p.stack_id() << "  (" << common::RuntimeKindName(p.runtime_kind())
        << ")  "
        << (p.verdict_reason().empty()
                ? absl::StrCat(common::VerdictStateName(p.verdict()), " on ", p.arch())
                                       : p.verdict_reason());
    if (!marked && latest != nullptr && latest->ended_at_ms() == 0 && latest->stack_id() == p.stack_id()) {
      marked = true;
      out << "  <- attempt " << latest->number() << ", " << InstPhase(latest->phase());
    }
    out << "\n";
  }
  for (const auto& p : st.excluded_plans()) {
    out << "  x  " << p.stack_id() << "  excluded: " << p.excluded_reason() << "\n";
  }
  const auto* a = LastAttempt(d);
  if (a) {
    const auto& pl = a->placement();
    // At zero the placement is history: the instance on it has stopped.
    const bool last_only = ScaledToZero(d) && a->ended_at_ms() != 0;
    out << (last_only ? "\nLast placement (stopped: scaled to zero):\n  node " : "\nPlacement:\n  node ")
        << pl.node() << " (" << pl.arch() << "), devices ["
        << absl::StrJoin(pl.device_indices(), ",") << "], TP=" << pl.tp() << ", port "
        << pl.port() << ", stack " << a->stack_id() << "\n";
    const std::vector<std::string> memory = modelkit::PlacementMemoryLines(pl);
    if (!memory.empty()) {
      out << "\nMemory (per device):\n";
      for (const auto& l : memory) out << "  " << l << "\n";
    }
    if (!a->instance().argv().empty()) {
      out << "\nLaunch: " << absl::StrJoin(a->instance().argv(), " ") << "\n";
    }
  }
  if (!st.findings().empty()) {
    out << "\nModel config findings:\n";
    for (const auto& f : st.findings()) {
      out << "  " << common::FindingSeverityName(f.severity()) << " " << f.code() << ": " << f.message() << "\n";
    }
  }
  if (!st.rejections().empty()) {
    out << "\nNodes not chosen:\n";
    PrintRejections(d, out);
  }
}

void PrintDeploymentDescription(const dcufleet::v1::GetDeploymentResponse& resp, std::ostream& out) {
  const Deployment& d = resp.deployment();
  const auto& s = d.spec();
  const auto& st = d.status();
  out << "Name:        " << s.name() << "\n";
  if (!d.uid().empty()) out << "UID:         " << d.uid() << "\n";
  out << "Model:       " << s.model() << "\n";
  out << "Phase:       " << Phase(st.phase()) << "\n";
  out << "Message:     " << st.message() << "\n";
  if (!st.endpoint().empty()) out << "Endpoint:    http://" << st.endpoint() << "/v1\n";
  out << "Requested:   TP=" << (s.tp() ? absl::StrCat(s.tp()) : "auto")
      << " max_model_len=" << s.max_model_len() << " max_num_seqs=" << s.max_num_seqs()
      << " gpu_memory_utilization=" << s.gpu_memory_utilization()
      << (s.node().empty() ? "" : absl::StrCat(" node=", s.node()))
      << (s.stack_id().empty() ? "" : absl::StrCat(" stack=", s.stack_id()))
      << (s.runtime().empty() ? "" : absl::StrCat(" runtime=", s.runtime())) << "\n";
  out << "Created:     " << Ago(st.created_at_ms()) << "\n";
  if (d.replicas_size() > 1 || s.replicas() > 1) {
    out << "Replicas:    " << d.ready_replicas() << "/" << DesiredReplicas(d)
        << " Ready (below: replica " << d.replica() << ", the first not Ready)\n";
    Table rt({"REPLICA", "PHASE", "NODE", "DEVICES", "ENDPOINT", "RESTARTS", "MESSAGE"});
    for (const auto& r : d.replicas()) {
      rt.AddRow({absl::StrCat(r.index()), Phase(r.phase()), r.node().empty() ? "-" : r.node(),
                 r.device_indices().empty() ? "-" : absl::StrJoin(r.device_indices(), ","),
                 r.endpoint().empty() ? "-" : r.endpoint(), absl::StrCat(r.restarts()),
                 ShortenKeepingEnd(r.message(), 80)});
    }
    std::ostringstream table;
    rt.Print(table);
    for (absl::string_view line : absl::StrSplit(table.str(), '\n')) {
      if (!line.empty()) out << "  " << line << "\n";
    }
  }
  if (!st.extra_env().empty() || !st.extra_args().empty() || !st.ld_library_path_prefix().empty()) {
    out << "Remediations in force:\n";
    for (const auto& [k, v] : st.extra_env()) out << "  env " << k << "=" << v << "\n";
    if (!st.extra_args().empty()) out << "  args " << absl::StrJoin(st.extra_args(), " ") << "\n";
    if (!st.ld_library_path_prefix().empty()) {
      out << "  LD_LIBRARY_PATH first: " << absl::StrJoin(st.ld_library_path_prefix(), ":") << "\n";
    }
  }
  out << "\n";
  PrintPlan(d, out);
  out << "\nAttempts:\n";
  if (st.attempts().empty()) out << "  none\n";
  Table t({"#", "INSTANCE", "STACK", "NODE", "DEVICES", "PHASE", "TOOK", "CAUSE"});
  for (const auto& a : st.attempts()) {
    int64_t end = a.ready_at_ms() ? a.ready_at_ms() : a.ended_at_ms();
    t.AddRow({absl::StrCat(a.number()), a.instance_id(), a.stack_id(), a.placement().node(),
              absl::StrJoin(a.placement().device_indices(), ","), InstPhase(a.phase()),
              end ? common::HumanDuration(end - a.created_at_ms()) : "-",
              a.orphaned()
                  ? absl::StrCat("node lost; may still run there: kept until '",
                                 a.placement().node(), "' returns")
              : a.readopted_from() ? absl::StrCat("re-adopted from attempt ", a.readopted_from())
              : a.findings().empty() ? (a.ended_at_ms() && !a.ready_at_ms() ? a.message() : "")
                                     : a.findings(0).failure_class()});
  }
  if (!st.attempts().empty()) t.Print(out);
  // The start-up of each attempt as its engine logged it: where it is (or
  // was), and once Ready the figures a user would otherwise read from the log.
  bool startup_header = false;
  for (const auto& a : st.attempts()) {
    if (!a.has_startup() || a.startup().phase() == dcufleet::v1::STARTUP_PHASE_UNSPECIFIED) continue;
    if (!startup_header) out << "\nStart-up:\n";
    startup_header = true;
    const bool live = a.ended_at_ms() == 0 && a.ready_at_ms() == 0;
    out << "  Attempt " << a.number() << ": "
        << StartupLine(a.startup(), live ? common::ToUnixMillis(absl::Now()) : 0) << "\n";
  }
  for (const auto& a : st.attempts()) {
    if (a.findings().empty()) continue;
    out << "\n  Attempt " << a.number() << " diagnosis:\n";
    for (const auto& f : a.findings()) {
      if (f.expected_next()) {
        out << "    " << f.failure_class() << " (" << static_cast<int>(f.confidence() * 100)
            << "%) expected next\n";
        if (!f.explanation().empty()) {
          out << "      why: " << ShortenKeepingEnd(f.explanation(), 240) << "\n";
        }
        if (!f.conditions().empty()) {
          out << "      rests on: " << absl::StrJoin(f.conditions(), ", ") << "\n";
        }
        continue;
      }
      const std::string kind = modelkit::RemediationKindName(f.remediation_kind());
      const std::string action = modelkit::DiagnosisActionName(f.remediation_action());
      out << "    " << f.failure_class() << " (" << static_cast<int>(f.confidence() * 100) << "%)";
      // "→ failover", not "→ failover: failover".
      if (f.remediation_kind() != dcufleet::v1::REMEDIATION_KIND_UNSPECIFIED) {
        out << " → " << RemediationWords(kind, action);
      }
      out << "\n";
      for (const auto& e : f.evidence()) out << "      | " << ShortenKeepingEnd(e, 160) << "\n";
      if (!f.conditions().empty()) {
        out << "      rests on: " << absl::StrJoin(f.conditions(), ", ") << "\n";
      }
    }
  }
  out << "\nEvents:\n";
  if (resp.events().empty()) out << "  none\n";
  Table ev({"  TIME", "TYPE", "REASON", "MESSAGE"});
  for (const auto& e : resp.events()) {
    ev.AddRow({absl::StrCat("  ", Clock(e.at_ms())), e.type(), e.reason(), e.message()});
  }
  if (!resp.events().empty()) ev.Print(out);
}

int RunDeploy(Client& client, const DeployArgs& args, std::ostream& out, std::ostream& err) {
  dcufleet::v1::DeployRequest req;
  *req.mutable_spec() = args.spec;
  req.set_dry_run(args.dry_run);
  dcufleet::v1::DeployResponse resp;
  grpc::Status s = CallFleet(client, &FleetStub::Deploy, req, &resp);
  // The controller refuses at admission what no fleet could schedule: the
  // same exit code as an unschedulable dry run or --wait.
  if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
      absl::StartsWith(s.error_message(), common::kNeverSchedulablePrefix)) {
    err << "error: deploying " << args.spec.model() << " " << s.error_message() << "\n";
    return kExitUnschedulable;
  }
  if (!s.ok()) return client.Fail(s, absl::StrCat("deploying ", args.spec.model()), err);
  const std::string& fmt = client.options().output;
  const Deployment& d = resp.deployment();
  if (args.dry_run) {
    if (IsStructured(fmt)) {
      if (int rc = PrintDocument(ProtoToJson(d), fmt, out, err); rc != kExitOk) return rc;
    } else {
      out << d.status().message() << "\n\n";
      PrintPlan(d, out);
    }
    int code = ExitFor(d);
    return code < 0 ? kExitOk : code;
  }
  // kubectl apply's words: created, configured, unchanged.
  out << "deployment '" << d.spec().name() << "' "
      << (resp.created() ? "created"
                         : resp.change().empty() ? "unchanged"
                                                 : absl::StrCat("configured (", resp.change(), ")"))
      << "\n";
  if (!args.wait && !args.watch) {
    if (!d.rollout_message().empty()) {
      out << "follow the rollout with: dcuctl rollout status deployment/" << d.spec().name()
          << "\n";
    } else {
      out << "follow it with: dcuctl describe deployment " << d.spec().name()
          << "  (or deploy with --watch)\n";
    }
    return kExitOk;
  }
  // Stream changes until ready, failed or unschedulable.
  const bool tty = isatty(STDOUT_FILENO) && &out == &std::cout;
  dcufleet::v1::WatchDeploymentRequest wreq;
  wreq.set_name(d.spec().name());
  grpc::ClientContext wctx;
  if (args.wait_timeout_s > 0) {
    wctx.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<int64_t>(args.wait_timeout_s * 1000)));
  }
  auto reader = client.stub().WatchDeployment(&wctx, wreq);
  dcufleet::v1::GetDeploymentResponse update;
  std::set<int64_t> seen_events;
  size_t printed = 0;
  bool bar_open = false;
  Deployment last = d;
  while (reader->Read(&update)) {
    last = update.deployment();
    if (args.watch) {
      for (size_t i = printed; i < static_cast<size_t>(update.events_size()); ++i) {
        const auto& e = update.events(static_cast<int>(i));
        if (tty && bar_open) {
          WriteTerminalControl(out, kRedrawLine);
          bar_open = false;
        }
        out << Clock(e.at_ms()) << "  " << e.reason() << "  " << e.message() << "\n";
      }
      printed = std::max<size_t>(printed, update.events_size());
      const auto* a = LastAttempt(last);
      // The start-up phase with its figures, a bar where there is a k/n,
      // and the time in phase: redrawn in place on a terminal, one line per
      // change of phase otherwise (the StartupPhase events say it too).
      if (a && a->has_startup() && a->ready_at_ms() == 0 && a->ended_at_ms() == 0 &&
          a->startup().phase() != dcufleet::v1::STARTUP_PHASE_UNSPECIFIED) {
        if (tty) {
          WriteTerminalControl(out, kRedrawLine);
          out << "  " << TerminalSafe(StartupLine(a->startup(), common::ToUnixMillis(absl::Now())))
              << std::flush;
          bar_open = true;
        }
      } else if (tty && a && a->shards_total() > 0 && a->ready_at_ms() == 0 && a->ended_at_ms() == 0) {
        WriteTerminalControl(out, kRedrawLine);
        out << "  loading shards " << Bar(a->shards_loaded(), a->shards_total()) << std::flush;
        bar_open = true;
      }
    }
    int code = ExitFor(last);
    if (code >= 0) {
      if (tty && bar_open) WriteTerminalControl(out, kRedrawLine);
      wctx.TryCancel();
      reader->Finish();
      if (code == kExitOk && last.replicas_size() > 1) {
        out << "deployment '" << last.spec().name() << "' is ready: " << last.ready_replicas()
            << " replicas (model name '" << last.spec().served_model_name() << "')\n";
        for (const auto& r : last.replicas()) {
          out << "  replica " << r.index() << ": http://" << r.endpoint() << "/v1\n";
        }
      } else if (code == kExitOk) {
        out << "deployment '" << last.spec().name() << "' is ready: http://"
            << last.status().endpoint() << "/v1 (model name '" << last.spec().served_model_name()
            << "')\n";
      } else if (code == kExitUnschedulable) {
        err << "deployment '" << last.spec().name() << "' cannot be scheduled:\n";
        PrintRejections(last, err);
        for (const auto& hint : UnschedulableHints(last)) err << hint << "\n";
      } else {
        err << "deployment '" << last.spec().name() << "' failed: " << last.status().message()
            << "\nsee: dcuctl describe deployment " << last.spec().name() << "\n";
      }
      return code;
    }
  }
  grpc::Status fs = reader->Finish();
  if (fs.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    err << "gave up waiting after " << args.wait_timeout_s << "s; deployment '" << d.spec().name()
        << "' is " << Phase(last.status().phase()) << ": " << last.status().message() << "\n";
    return kExitFailed;
  }
  if (!fs.ok()) return client.Fail(fs, "watching the deployment", err);
  return kExitFailed;
}

int RunGetDeployments(Client& client, const std::string& name, std::ostream& out,
                      std::ostream& err) {
  if (!name.empty()) {
    // `get deployment NAME`: its row (its object with -o json|yaml).
    dcufleet::v1::GetDeploymentRequest req;
    req.set_name(name);
    QueryView<dcufleet::v1::GetDeploymentResponse> one;
    one.structured = [](const dcufleet::v1::GetDeploymentResponse& resp) {
      return ProtoToJson(resp.deployment());
    };
    one.names = [](const dcufleet::v1::GetDeploymentResponse& resp) {
      return std::vector<std::string>{absl::StrCat("deployment/", resp.deployment().spec().name())};
    };
    one.render = [&](const dcufleet::v1::GetDeploymentResponse& resp, const std::string& fmt) {
      dcufleet::v1::ListDeploymentsResponse list;
      *list.add_deployments() = resp.deployment();
      DeploymentsTable(list, fmt == "wide").Print(out, !client.options().no_headers);
      return kExitOk;
    };
    return RunQuery(client, &FleetStub::GetDeployment, req,
                    absl::StrCat("getting deployment '", name, "'"), one, out, err);
  }
  QueryView<dcufleet::v1::ListDeploymentsResponse> view;
  view.structured = [](const dcufleet::v1::ListDeploymentsResponse& resp) {
    return ProtoToJsonListing(resp, {"deployments"});
  };
  view.items = "deployments";
  view.names = [](const dcufleet::v1::ListDeploymentsResponse& resp) {
    std::vector<std::string> names;
    for (const auto& d : resp.deployments()) names.push_back(absl::StrCat("deployment/", d.spec().name()));
    return names;
  };
  view.render = [&](const dcufleet::v1::ListDeploymentsResponse& resp, const std::string& fmt) {
    if (resp.deployments().empty()) {
      err << "No deployments. Create one with: dcuctl deploy MODEL\n";
      return kExitOk;
    }
    DeploymentsTable(resp, fmt == "wide").Print(out, !client.options().no_headers);
    return kExitOk;
  };
  return RunQuery(client, &FleetStub::ListDeployments, dcufleet::v1::ListDeploymentsRequest(),
                  "listing deployments", view, out, err);
}

int RunDescribeDeployment(Client& client, const std::string& name, std::ostream& out,
                          std::ostream& err) {
  dcufleet::v1::GetDeploymentRequest req;
  req.set_name(name);
  QueryView<dcufleet::v1::GetDeploymentResponse> view;
  view.render = [&](const dcufleet::v1::GetDeploymentResponse& resp, const std::string&) {
    PrintDeploymentDescription(resp, out);
    return kExitOk;
  };
  return RunQuery(client, &FleetStub::GetDeployment, req,
                  absl::StrCat("describing deployment '", name, "'"), view, out, err);
}

namespace {

// Until `name` is gone (exit 0), saying why it waits while its node is away.
int WaitDeleted(Client& client, const std::string& name, std::ostream& out, std::ostream& err) {
  absl::Time deadline = absl::Now() + absl::Seconds(client.options().timeout_s * 12);
  std::string said;  // the last "pending" line, printed once per change
  while (absl::Now() < deadline) {
    dcufleet::v1::GetDeploymentRequest g;
    g.set_name(name);
    dcufleet::v1::GetDeploymentResponse gr;
    grpc::Status gs = CallFleet(client, &FleetStub::GetDeployment, g, &gr);
    if (gs.error_code() == grpc::StatusCode::NOT_FOUND) {
      out << "deployment '" << name << "' deleted; its instances are stopped\n";
      return kExitOk;
    }
    if (!gs.ok()) return client.Fail(gs, "waiting for the deletion", err);
    // The controller stops an instance only through its node's agent: while
    // that node is not connected the deletion waits, and says so.
    const auto& attempts = gr.deployment().status().attempts();
    if (!attempts.empty() && attempts.rbegin()->ended_at_ms() == 0) {
      const auto& a = *attempts.rbegin();
      dcufleet::v1::GetNodeRequest nr;
      nr.set_name(a.placement().node());
      dcufleet::v1::NodeView node;
      if (CallFleet(client, &FleetStub::GetNode, nr, &node).ok() &&
          node.state() != dcufleet::v1::NODE_READY) {
        std::string line = absl::StrCat(
            "pending: node '", node.name(), "' not connected (", common::NodeStateName(node.state()),
            node.state_reason().empty() ? "" : absl::StrCat(": ", node.state_reason()),
            "); instance '", a.instance_id(), "' is stopped when it reconnects");
        if (line != said) out << line << "\n" << std::flush;
        said = std::move(line);
      }
    }
    absl::SleepFor(absl::Milliseconds(300));
  }
  err << "deployment '" << name << "' still deleting"
      << (said.empty() ? " (its node may be unreachable)" : absl::StrCat(" (", said, ")"))
      << "; it finishes by itself once the node reports or is declared Lost\n";
  return kExitFailed;
}

}  // namespace

int RunDeleteDeployments(Client& client, const std::vector<std::string>& names, bool wait,
                         std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  std::vector<std::string> deleting;
  for (const std::string& name : names) {
    dcufleet::v1::DeleteDeploymentRequest req;
    req.set_name(name);
    dcufleet::v1::DeleteDeploymentResponse resp;
    grpc::Status s = CallFleet(client, &FleetStub::DeleteDeployment, req, &resp);
    if (!s.ok()) {
      const int failed = client.Fail(s, absl::StrCat("deleting deployment '", name, "'"), err);
      if (code == kExitOk) code = failed;
      continue;
    }
    out << "deployment '" << name << "' deleting\n";
    deleting.push_back(name);
  }
  if (!wait) return code;
  for (const std::string& name : deleting) {
    const int waited = WaitDeleted(client, name, out, err);
    if (code == kExitOk) code = waited;
  }
  return code;
}

int RunLogs(Client& client, const LogsArgs& args, std::ostream& out, std::ostream& err) {
  const std::string& name = args.name;
  const bool follow = args.follow;
  if (!args.instance.empty() && (args.replica >= 0 || args.previous)) {
    err << "error: --instance names one attempt; give it alone, or choose with --replica and "
           "--previous\n";
    return kExitUsage;
  }
  // The last lines printed (at most a tail's worth), to compare a tail with
  // when the log has no positions (the tail kept with a failed attempt
  // while its node is away; an older agent's answer).
  std::deque<std::string> printed;
  std::string previous_instance;
  // Where the followed instance's log goes on, when it has positions: then
  // every line of an answer is new, whatever it repeats.
  std::optional<int64_t> offset;
  // What the last answer said it waits for, said once until it changes.
  std::string waiting;
  const size_t keep = static_cast<size_t>(args.tail > 0 ? args.tail : 200);
  // --tail is how much of the log to show first, as kubectl's is; a read
  // from a position takes what was written since, up to its own bound
  // (before, every read of -f was bounded by --tail: `--tail 3` lost all
  // but 3 lines a second of an engine's start-up).
  const int per_read = std::max(args.tail, kFollowReadLines);
  LiveLine live(out, follow && args.terminal, args.columns);
  while (true) {
    dcufleet::v1::GetLogsRequest req;
    req.set_deployment(name);
    req.set_instance_id(args.instance);
    // After the first read: a position's lines, or a new attempt's log
    // from its start (a switch), take a whole read.
    const int asked = follow && (offset || !previous_instance.empty()) ? per_read : args.tail;
    req.set_tail_lines(asked);
    if (args.replica >= 0) req.set_replica(args.replica);
    req.set_previous(args.previous);
    if (follow) {
      req.set_since_offset(offset.value_or(-1));
      // The instance followed so far: another one's log is read from its
      // start, whether or not this one's last answer had a position.
      req.set_offset_instance_id(previous_instance);
    }
    dcufleet::v1::GetLogsResponse resp;
    grpc::Status s = CallFleet(client, &FleetStub::GetLogs, req, &resp);
    if (!s.ok()) return client.Fail(s, absl::StrCat("fetching logs of '", name, "'"), err);
    std::vector<std::string> lines(resp.lines().begin(), resp.lines().end());
    size_t start = 0;
    const bool switched = !previous_instance.empty() && resp.instance_id() != previous_instance;
    // What follows is written over the line still being written, if one
    // is shown; it is shown again below (Show) while it goes on.
    live.Clear();
    if (switched) {
      // Following the latest attempt, and there is a new one (a restart, a
      // failover): its log from the top, said on stderr so that stdout
      // stays the log.
      err << "--- instance " << resp.instance_id() << " on node " << resp.node() << " (was "
          << previous_instance << ") ---\n";
    }
    if (resp.has_next_offset() && (offset || switched)) {
      // Read from a position: all of it is new.
      if (resp.skipped_bytes() > 0 && switched) {
        err << "--- the first " << resp.skipped_bytes() << " bytes of its log are beyond the " << asked
            << " lines a read takes: not shown (dcuctl logs --instance " << resp.instance_id()
            << " --tail N) ---\n";
      } else if (resp.skipped_bytes() > 0) {
        err << "--- " << resp.skipped_bytes() << " bytes arrived beyond the " << asked
            << " lines a read takes: not shown (a --tail above " << asked << " raises it) ---\n";
      } else if (resp.skipped_bytes() < 0) {
        err << "--- the log was replaced: from its start ---\n";
      }
    } else if (!previous_instance.empty() && !switched) {
      // Tails are compared at the size printed (--tail): a longer one
      // would not begin where the last ended.
      if (lines.size() > keep) lines.erase(lines.begin(), lines.end() - static_cast<long>(keep));
      bool gap = false;
      start = NewLinesStart(std::vector<std::string>(printed.begin(), printed.end()), lines, &gap);
      if (gap) {
        err << "--- more than " << args.tail << " lines arrived between two reads: some are not "
            << "shown (raise --tail) ---\n";
      }
    }
    if (switched) printed.clear();
    if (!resp.waiting().empty() && resp.waiting() != waiting) {
      // The node's own words: no control sequences reach the terminal.
      // No instance yet: the deployment's own words say whose launch.
      err << "--- waiting"
          << (resp.instance_id().empty() ? "" : " for instance " + TerminalSafe(resp.instance_id()))
          << ": " << TerminalSafe(resp.waiting()) << " ---\n";
    }
    waiting = resp.waiting();
    for (size_t i = start; i < lines.size(); ++i) {
      if (args.terminal) {
        out << common::LastRedraw(lines[i]) << "\n";
      } else {
        out << lines[i] << "\n";
      }
      printed.push_back(lines[i]);
      if (printed.size() > keep) printed.pop_front();
    }
    if (follow) live.Show(resp.partial());
    out.flush();
    if (!follow) return kExitOk;
    previous_instance = resp.instance_id();
    offset = resp.has_next_offset() ? std::optional<int64_t>(resp.next_offset()) : std::nullopt;
    // A read that was full (the log grows faster than a read a second
    // takes) is followed by the next at once.
    const bool full = resp.has_next_offset() && (resp.skipped_bytes() > 0 || lines.size() >= static_cast<size_t>(asked));
    if (!full) absl::SleepFor(absl::Seconds(1));
  }
}

size_t NewLinesStart(const std::vector<std::string>& previous, const std::vector<std::string>& lines,
                     bool* gap) {
  *gap = false;
  if (previous.empty()) return 0;
  // The longest end of `previous` that `lines` begins with: what follows
  // it is new. Longest first, so a log that repeats a line is not re-read.
  for (size_t k = std::min(previous.size(), lines.size()); k > 0; --k) {
    if (std::equal(previous.end() - static_cast<long>(k), previous.end(), lines.begin())) return k;
  }
  // No overlap: the log grew by a whole tail or more between the reads.
  *gap = !lines.empty();
  return 0;
}

void PrintReapReport(const dcufleet::v1::ReapReport& r, std::ostream& out) {
  out << (r.dry_run() ? "Dry run: nothing was signalled.\n" : "");
  if (r.actions().empty()) {
    out << "No process holds a device that a reap would stop.\n";
  } else {
    Table t({"PID", "ACTION", "RESULT", "INSTANCE", "REASON", "COMMAND"});
    for (const auto& a : r.actions()) {
      t.AddRow({absl::StrCat(a.pid()), a.action(), a.result(),
                a.instance_id().empty() ? "-" : a.instance_id(), a.reason(),
                a.cmdline().size() > 60 ? a.cmdline().substr(0, 57) + "..." : a.cmdline()});
    }
    t.Print(out);
  }
  if (!r.memory().empty()) {
    out << "\nDevice memory:\n";
    Table m({"  DEVICE", "UNRECLAIMED BEFORE", r.dry_run() ? "UNRECLAIMED NOW" : "UNRECLAIMED AFTER"});
    for (const auto& d : r.memory()) {
      m.AddRow({absl::StrCat("  ", d.index()), common::HumanBytes(d.unreclaimed_before()),
                common::HumanBytes(d.unreclaimed_after())});
    }
    m.Print(out);
  }
  for (const auto& f : r.findings()) out << "\n" << f.code() << ": " << f.message() << "\n";
}

int RunReapNode(Client& client, const std::string& node, bool dry_run, bool include_unmanaged,
                std::ostream& out, std::ostream& err) {
  dcufleet::v1::ReapNodeRequest req;
  req.set_node(node);
  req.set_dry_run(dry_run);
  req.set_include_unmanaged(include_unmanaged);
  dcufleet::v1::ReapNodeResponse resp;
  // Not CallFleet: reaping waits out each holder's grace period on the node,
  // far longer than --timeout's default.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(150));
  grpc::Status s = client.stub().ReapNode(&ctx, req, &resp);
  if (!s.ok()) return client.Fail(s, absl::StrCat("reaping node '", node, "'"), err);
  const std::string& fmt = client.options().output;
  nlohmann::json report = nlohmann::json::parse(resp.report_json(), nullptr, false);
  if (IsStructured(fmt)) {
    nlohmann::json j = {{"ok", resp.ok()}, {"message", resp.message()}, {"report", report}};
    if (int rc = PrintDocument(j, fmt, out, err); rc != kExitOk) return rc;
  } else {
    // A person reads a summary; -o json|yaml has the whole report. The
    // node's one-line message ("2 action(s) on node ..."), except where the
    // report's own first line says it for a dry run.
    dcufleet::v1::ReapReport rr;
    google::protobuf::util::JsonParseOptions jo;
    jo.ignore_unknown_fields = true;
    const bool parsed = google::protobuf::util::JsonStringToMessage(resp.report_json(), &rr, jo).ok();
    if (!parsed || !resp.ok() || !rr.dry_run()) out << resp.message() << "\n";
    if (parsed) {
      PrintReapReport(rr, out);
    } else if (report.is_object()) {
      out << report.dump(2) << "\n";
    }
  }
  return resp.ok() ? kExitOk : kExitFailed;
}

}  // namespace dcu::dcuctl
