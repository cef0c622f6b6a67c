#include "controller/service/fleet_service.h"

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/version.h"
#include "controller/service/status_convert.h"

#include <thread>
#include <nlohmann/json.hpp>

namespace dcu::controller {
namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx, const absl::Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* FleetServiceImpl::GetVersion(grpc::CallbackServerContext* ctx,
                                                       const dcufleet::v1::GetVersionRequest*,
                                                       dcufleet::v1::GetVersionResponse* resp) {
  resp->set_version(common::kVersion);
  resp->set_schema_version(deps_.schema_version);
  resp->set_db_path(deps_.db_path);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListNodes(grpc::CallbackServerContext* ctx,
                                                      const dcufleet::v1::ListNodesRequest*,
                                                      dcufleet::v1::ListNodesResponse* resp) {
  for (auto& n : deps_.fleet->ListNodes()) *resp->add_nodes() = std::move(n);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetNode(grpc::CallbackServerContext* ctx,
                                                    const dcufleet::v1::GetNodeRequest* req,
                                                    dcufleet::v1::NodeView* resp) {
  std::string why = common::ValidateName("name", req->name());
  if (!why.empty()) return Done(ctx, absl::InvalidArgumentError(why));
  auto node = deps_.fleet->GetNode(req->name());
  if (!node) {
    return Done(ctx, absl::NotFoundError(absl::StrCat("node '", req->name(), "' not found")));
  }
  *resp = std::move(*node);
  return Done(ctx, absl::OkStatus());
}

}  // namespace dcu::controller

namespace dcu::controller {
namespace {

// Runs `fn` off the gRPC callback thread (it may block on an agent round
// trip) and finishes the reactor with its status.
grpc::ServerUnaryReactor* Async(grpc::CallbackServerContext* ctx, std::function<absl::Status()> fn) {
  auto* reactor = ctx->DefaultReactor();
  std::thread([reactor, fn = std::move(fn)] { reactor->Finish(ToGrpcStatus(fn())); }).detach();
  return reactor;
}

void FillEvents(EventLog* events, const std::string& name,
                dcufleet::v1::GetDeploymentResponse* resp) {
  if (!events) return;
  auto list = events->ListEvents("deployment", name, 200);
  if (!list.ok()) return;
  for (const auto& e : *list) {
    auto* v = resp->add_events();
    v->set_at_ms(e.at_ms);
    v->set_type(e.type);
    v->set_reason(e.reason);
    v->set_message(e.message);
  }
}

absl::Status CheckName(const char* what, const std::string& name) {
  std::string why = common::ValidateName(what, name);
  return why.empty() ? absl::OkStatus() : absl::InvalidArgumentError(why);
}

class WatchReactor : public grpc::ServerWriteReactor<dcufleet::v1::GetDeploymentResponse> {
 public:
  WatchReactor(DeployController* deployments, EventLog* events, std::string name, int64_t after)
      : deployments_(deployments), events_(events), name_(std::move(name)), revision_(after) {
    thread_ = std::thread([this] { Loop(); });
  }
  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) cancelled_ = true;
  }
  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  void OnDone() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    thread_.join();
    delete this;
  }

 private:
  void Loop() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (cancelled_) break;
      }
      auto d = deployments_->WaitForChange(name_, revision_, absl::Milliseconds(500));
      if (!d) {
        Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                            absl::StrCat("deployment '", name_, "' not found (deleted)")));
        return;
      }
      if (d->revision() <= revision_) continue;
      revision_ = d->revision();
      resp_.Clear();
      *resp_.mutable_deployment() = *d;
      FillEvents(events_, name_, &resp_);
      {
        absl::MutexLock lock(&mu_);
        if (cancelled_) break;
        writing_ = true;
      }
      StartWrite(&resp_);
      absl::MutexLock lock(&mu_);
      auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_ || cancelled_; };
      mu_.Await(absl::Condition(&done));
      if (cancelled_) break;
    }
    Finish(grpc::Status::OK);
  }

  DeployController* deployments_;
  EventLog* events_;
  std::string name_;
  int64_t revision_;
  dcufleet::v1::GetDeploymentResponse resp_;
  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace

grpc::ServerUnaryReactor* FleetServiceImpl::ReapNode(grpc::CallbackServerContext* ctx,
                                                     const dcufleet::v1::ReapNodeRequest* req,
                                                     dcufleet::v1::ReapNodeResponse* resp) {
  absl::Status s = CheckName("node", req->node());
  if (!s.ok()) return Done(ctx, s);
  if (req->grace_ms() < 0 || req->grace_ms() > 600000) {
    return Done(ctx, absl::InvalidArgumentError("grace_ms must be between 0 and 600000"));
  }
  dcufleet::v1::ReapNodeRequest copy = *req;
  FleetState* fleet = deps_.fleet;
  EventLog* events = deps_.events;
  return Async(ctx, [fleet, events, copy, resp]() -> absl::Status {
    dcufleet::v1::Command cmd;
    cmd.mutable_reap()->set_dry_run(copy.dry_run());
    cmd.mutable_reap()->set_include_unmanaged(copy.include_unmanaged());
    cmd.mutable_reap()->set_grace_ms(copy.grace_ms() ? copy.grace_ms() : 5000);
    auto r = fleet->RunCommand(copy.node(), cmd, absl::Seconds(120));
    if (!r.ok()) return r.status();
    resp->set_ok(r->ok());
    resp->set_message(r->message());
    resp->set_report_json(r->payload_json());
    if (events && !copy.dry_run()) {
      (void)events->AppendEvent({0, absl::ToUnixMillis(absl::Now()), "node", copy.node(),
                                 r->ok() ? "Normal" : "Warning", "Reaped", r->message()});
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* FleetServiceImpl::Deploy(grpc::CallbackServerContext* ctx,
                                                   const dcufleet::v1::DeployRequest* req,
                                                   dcufleet::v1::DeployResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  // Answered when the deployment is durable, without holding a gRPC thread
  // meanwhile (the writer commits concurrent Deploys together).
  auto* reactor = ctx->DefaultReactor();
  deps_.deployments->DeployAsync(req->spec(), req->dry_run(),
                                 [reactor, resp](absl::StatusOr<dcufleet::v1::DeployResponse> r) {
                                   if (r.ok()) *resp = std::move(*r);
                                   reactor->Finish(ToGrpcStatus(r.status()));
                                 });
  return reactor;
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListDeployments(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::ListDeploymentsRequest*,
    dcufleet::v1::ListDeploymentsResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  for (auto& d : deps_.deployments->List()) *resp->add_deployments() = std::move(d);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetDeployment(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::GetDeploymentRequest* req,
    dcufleet::v1::GetDeploymentResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  absl::Status s = CheckName("deployment name", req->name());
  if (!s.ok()) return Done(ctx, s);
  auto d = deps_.deployments->Get(req->name());
  if (!d.ok()) return Done(ctx, d.status());
  *resp->mutable_deployment() = *d;
  FillEvents(deps_.events, req->name(), resp);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerWriteReactor<dcufleet::v1::GetDeploymentResponse>* FleetServiceImpl::WatchDeployment(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::WatchDeploymentRequest* req) {
  absl::Status s = CheckName("deployment name", req->name());
  if (s.ok() && !deps_.deployments) s = absl::UnavailableError("deployments are not enabled");
  if (s.ok()) s = deps_.deployments->Get(req->name()).status();
  if (!s.ok()) {
    class Refuse : public grpc::ServerWriteReactor<dcufleet::v1::GetDeploymentResponse> {
     public:
      explicit Refuse(const grpc::Status& st) { Finish(st); }
      void OnDone() override { delete this; }
    };
    return new Refuse(ToGrpcStatus(s));
  }
  return new WatchReactor(deps_.deployments, deps_.events, req->name(), req->after_revision());
}

grpc::ServerUnaryReactor* FleetServiceImpl::DeleteDeployment(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::DeleteDeploymentRequest* req,
    dcufleet::v1::DeleteDeploymentResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  absl::Status s = CheckName("deployment name", req->name());
  if (!s.ok()) return Done(ctx, s);
  auto d = deps_.deployments->Delete(req->name());
  if (d.ok()) *resp->mutable_deployment() = *d;
  return Done(ctx, d.status());
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetLogs(grpc::CallbackServerContext* ctx,
                                                    const dcufleet::v1::GetLogsRequest* req,
                                                    dcufleet::v1::GetLogsResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  absl::Status s = CheckName("deployment name", req->deployment());
  if (!s.ok()) return Done(ctx, s);
  if (req->tail_lines() < 0 || req->tail_lines() > 100000) {
    return Done(ctx, absl::InvalidArgumentError("tail_lines must be between 0 and 100000"));
  }
  auto d = deps_.deployments->Get(req->deployment());
  if (!d.ok()) return Done(ctx, d.status());
  const dcufleet::v1::Attempt* attempt = nullptr;
  for (const auto& a : d->status().attempts()) {
    if (req->instance_id().empty() || a.instance_id() == req->instance_id()) attempt = &a;
  }
  if (!attempt) {
    return Done(ctx, absl::NotFoundError(
                         req->instance_id().empty()
                             ? absl::StrCat("deployment '", req->deployment(), "' has not launched yet")
                             : absl::StrCat("instance '", req->instance_id(), "' not found in deployment '",
                                            req->deployment(), "'")));
  }
  dcufleet::v1::Attempt a = *attempt;
  FleetState* fleet = deps_.fleet;
  int tail = req->tail_lines() ? req->tail_lines() : 200;
  return Async(ctx, [fleet, a, tail, resp]() -> absl::Status {
    resp->set_instance_id(a.instance_id());
    resp->set_node(a.placement().node());
    dcufleet::v1::Command cmd;
    cmd.mutable_fetch_logs()->set_instance_id(a.instance_id());
    cmd.mutable_fetch_logs()->set_tail_lines(tail);
    auto r = fleet->RunCommand(a.placement().node(), cmd, absl::Seconds(15));
    if (r.ok() && r->ok()) {
      auto j = nlohmann::json::parse(r->payload_json(), nullptr, false);
      if (j.is_object() && j.contains("lines") && j["lines"].is_array()) {
        for (const auto& l : j["lines"]) {
          if (l.is_string()) resp->add_lines(l.get<std::string>());
        }
        return absl::OkStatus();
      }
    }
    // The node is away or the log is gone: the tail kept with the attempt.
    for (const auto& l : a.log_tail()) resp->add_lines(l);
    if (resp->lines().empty()) {
      return absl::UnavailableError(absl::StrCat(
          "no logs for instance '", a.instance_id(), "': node '", a.placement().node(), "' ",
          r.ok() ? r->message() : std::string(r.status().message())));
    }
    return absl::OkStatus();
  });
}

}  // namespace dcu::controller
