#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "dcuctl/client.h"
#include "dcuctl/output.h"
#include "dcufleet/v1/deploy.pb.h"
#include "dcufleet/v1/fleet.pb.h"
#include "dcufleet/v1/node_truth.pb.h"

namespace dcu::dcuctl {

struct DeployArgs {
  dcufleet::v1::DeploymentSpec spec;
  bool dry_run = false;
  bool wait = false;
  bool watch = false;
  // Seconds --wait/--watch wait before giving up (exit 1), 0 = forever.
  double wait_timeout_s = 3600;
};

// dcuctl deploy MODEL ...: exit 0 ready (or accepted without --wait),
// 5 unschedulable, 6 failed, 2 refused input.
int RunDeploy(Client& client, const DeployArgs& args, std::ostream& out, std::ostream& err);
// All deployments, or (`get deployment NAME`) one.
int RunGetDeployments(Client& client, const std::string& name, std::ostream& out,
                      std::ostream& err);
int RunDescribeDeployment(Client& client, const std::string& name, std::ostream& out,
                          std::ostream& err);
// `delete deployment a b c` as kubectl: each one asked for in turn, one
// failing does not keep the others; with `wait`, then waits until each
// asked is gone. Exit 0 when all went, else the first failure's code.
int RunDeleteDeployments(Client& client, const std::vector<std::string>& names, bool wait,
                         std::ostream& out, std::ostream& err);
// dcuctl logs NAME: which instance's log (kubectl logs' choices), how much.
struct LogsArgs {
  std::string name;
  // One instance; else the latest attempt of `replica` (>= 0), else of the
  // replica `get` shows; `previous`: the attempt before that one.
  std::string instance;
  int replica = -1;
  bool previous = false;
  int tail = 200;
  bool follow = false;
  // stdout is a terminal of `columns`: a line redrawn with '\r' (a
  // progress bar's) is shown as the terminal would show it, its last
  // redraw (elsewhere its '\r's are escaped, "\x0d"), and -f shows the line
  // still being written in place below the others.
  bool terminal = false;
  size_t columns = 80;
};
// What one read of `logs -f` takes from a position at most, in lines (an
// agent reads ~400 bytes a line: 800 KB), when --tail asks for less: a
// follower a second apart keeps up with 2,000 lines a second, and one that
// finds its read full reads again at once.
inline constexpr int kFollowReadLines = 2000;
// Exit 0; 3 unknown deployment, replica or instance, or no earlier attempt.
// With `follow`, a new attempt (a restart) is followed from its first line,
// announced on stderr.
int RunLogs(Client& client, const LogsArgs& args, std::ostream& out, std::ostream& err);
// Where the new lines of `lines` (a tail read after `previous`) start: after
// the longest end of `previous` it begins with. No overlap at all: 0, and
// `gap` set (more than a tail arrived between the two reads).
size_t NewLinesStart(const std::vector<std::string>& previous, const std::vector<std::string>& lines,
                     bool* gap);
int RunReapNode(Client& client, const std::string& node, bool dry_run, bool include_unmanaged,
                std::ostream& out, std::ostream& err);

// `get deployments`' table and one deployment's row (--watch prints rows).
Table DeploymentsTable(const dcufleet::v1::ListDeploymentsResponse& resp, bool wide);
std::vector<std::string> DeploymentRow(const dcufleet::v1::Deployment& d, bool wide);
// The deployment is scaled to zero (the controller's phase says so).
bool ScaledToZero(const dcufleet::v1::Deployment& d);
// Replicas wanted, as get, describe and rollout status show them: none at
// zero; spec.replicas 0 otherwise is a document from before replicas (one).
int DesiredReplicas(const dcufleet::v1::Deployment& d);
// "Ready", "Unschedulable", ... as the PHASE column has it.
std::string DeploymentPhaseName(dcufleet::v1::DeploymentPhase phase);

// The whole story of one deployment, as `describe deployment` prints it.
// `dcuctl node reap` in table mode: what was (or would be) signalled, the
// device memory before and after, the findings.
void PrintReapReport(const dcufleet::v1::ReapReport& report, std::ostream& out);
void PrintDeploymentDescription(const dcufleet::v1::GetDeploymentResponse& d, std::ostream& out);
// What to do about an Unschedulable deployment, one line per cause its
// rejections name (model missing, node away, devices held, stack missing,
// memory), or the generic line when none is recognised.
std::vector<std::string> UnschedulableHints(const dcufleet::v1::Deployment& d);
// Plans, placement and memory arithmetic (deploy --dry-run).
void PrintPlan(const dcufleet::v1::Deployment& d, std::ostream& out);

}  // namespace dcu::dcuctl
