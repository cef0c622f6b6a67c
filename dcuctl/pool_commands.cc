#include "dcuctl/pool_commands.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/units.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"
#include "dcufleet/v1/pool.grpc.pb.h"

namespace dcu::dcuctl {

namespace {

std::string Left(int64_t end_ms) {
  if (end_ms <= 0) return "-";
  int64_t ms = end_ms - absl::ToUnixMillis(absl::Now());
  return ms <= 0 ? "ended" : common::HumanDuration(ms);
}

std::string StateWord(const dcufleet::v1::PoolJobView& j) {
  switch (j.state()) {
    case dcufleet::v1::POOL_JOB_SUBMITTING:
      return "SUBMITTING";
    case dcufleet::v1::POOL_JOB_PENDING:
      return "PENDING";
    case dcufleet::v1::POOL_JOB_RUNNING:
      return "RUNNING";
    case dcufleet::v1::POOL_JOB_ENDED:
      return absl::StrCat("ENDED (", j.slurm_state(), ")");
    default:
      return "UNKNOWN";
  }
}

}  // namespace

void PrintPools(const dcufleet::v1::ListPoolsResponse& resp, std::ostream& out, bool headers) {
  Table pools({"POOL", "KIND", "PARTITION", "SUBMITTED", "PENDING", "RUNNING", "MAX JOBS", "ERROR"});
  bool any_job = false;
  for (const auto& p : resp.pools()) {
    int submitted = 0, pending = 0, running = 0;
    for (const auto& j : p.jobs()) {
      any_job = true;
      if (j.state() == dcufleet::v1::POOL_JOB_SUBMITTING) ++submitted;
      if (j.state() == dcufleet::v1::POOL_JOB_PENDING) ++pending;
      if (j.state() == dcufleet::v1::POOL_JOB_RUNNING) ++running;
    }
    // SUBMITTED counts every live job the pool asked for.
    pools.AddRow({p.name(), p.kind(), p.partition(), absl::StrCat(submitted + pending + running),
                  absl::StrCat(pending), absl::StrCat(running), absl::StrCat(p.max_jobs()),
                  p.error().empty() ? "-" : p.error()});
  }
  pools.Print(out, headers);
  if (!any_job) return;
  out << "\n";
  Table jobs({"POOL", "JOB", "STATE", "REASON", "SLURM NODES", "NODE", "REPLICA", "DEVICES", "LEFT"});
  for (const auto& p : resp.pools()) {
    for (const auto& j : p.jobs()) {
      jobs.AddRow({p.name(), j.job_id().empty() ? "-" : j.job_id(), StateWord(j),
                   j.reason().empty() ? "-" : j.reason(), j.slurm_nodes().empty() ? "-" : j.slurm_nodes(),
                   j.node().empty() ? "-" : j.node(), j.for_replica().empty() ? "-" : j.for_replica(),
                   j.devices() ? absl::StrCat(j.devices()) : "-",
                   j.state() == dcufleet::v1::POOL_JOB_RUNNING ? Left(j.end_time_ms()) : "-"});
    }
  }
  jobs.Print(out, headers);
}

int RunGetPools(Client& client, std::ostream& out, std::ostream& err) {
  QueryView<dcufleet::v1::ListPoolsResponse> view;
  view.structured = [](const dcufleet::v1::ListPoolsResponse& resp) {
    return ProtoToJsonListing(resp, {"pools"});
  };
  view.items = "pools";
  view.names = [](const dcufleet::v1::ListPoolsResponse& resp) {
    std::vector<std::string> names;
    for (const auto& p : resp.pools()) names.push_back(absl::StrCat("pool/", p.name()));
    return names;
  };
  view.render = [&](const dcufleet::v1::ListPoolsResponse& resp, const std::string&) {
    if (resp.pools().empty()) {
      err << "No node pools configured (dcu-controller --pools FILE; docs/slurm.md).\n";
      return kExitOk;
    }
    PrintPools(resp, out, !client.options().no_headers);
    return kExitOk;
  };
  // PoolService shares FleetService's channel, deadline and error lines.
  dcufleet::v1::ListPoolsResponse resp;
  grpc::Status status(grpc::StatusCode::UNAVAILABLE, client.status().ToString());
  if (client.channel()) {
    auto stub = dcufleet::v1::PoolService::NewStub(client.channel());
    auto ctx = client.Context();
    status = stub->ListPools(ctx.get(), dcufleet::v1::ListPoolsRequest(), &resp);
  }
  if (!status.ok()) return client.Fail(status, "listing pools", err);
  return ShowResponse(client, resp, view, out, err);
}

}  // namespace dcu::dcuctl
