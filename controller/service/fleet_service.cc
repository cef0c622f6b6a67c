#include "controller/service/fleet_service.h"

#include "controller/core/model_sources.h"

#include "controller/service/looping_writer.h"
#include "controller/service/serving_watch.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <set>

#include <malloc.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/hash.h"
#include "common/redraw.h"
#include "common/ids.h"
#include "common/input_rules.h"
#include "common/version.h"
#include "controller/service/status_convert.h"

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
  auto r = ReadNodes(deps_);
  if (r.ok()) *resp = std::move(*r);
  return Done(ctx, r.status());
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
// trip) on a thread of `threads`, and finishes the reactor with its status.
grpc::ServerUnaryReactor* Async(grpc::CallbackServerContext* ctx, OwnedThreads& threads,
                                std::function<absl::Status()> fn) {
  auto* reactor = ctx->DefaultReactor();
  threads.Run([reactor, fn = std::move(fn)] { reactor->Finish(ToGrpcStatus(fn())); });
  return reactor;
}

// Streams a deployment's new revisions (the loop and lifetime:
// looping_writer.h).
class WatchReactor : public LoopingWriter<dcufleet::v1::GetDeploymentResponse> {
 public:
  WatchReactor(DeployController* deployments, EventLog* events, std::string name, int64_t after)
      : deployments_(deployments), events_(events), name_(std::move(name)), revision_(after) {}

 private:
  void Loop() override {
    while (!Cancelled()) {
      // The timeout only bounds how late a cancellation is noticed.
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
      FillDeploymentEvents(events_, name_, &resp_);
      if (!Write(&resp_)) break;
    }
    Finish(grpc::Status::OK);
  }

  DeployController* const deployments_;
  EventLog* const events_;
  const std::string name_;
  // Only the loop's thread touches these two.
  int64_t revision_;
  dcufleet::v1::GetDeploymentResponse resp_;
};

}  // namespace

grpc::ServerUnaryReactor* FleetServiceImpl::CordonNode(grpc::CallbackServerContext* ctx,
                                                       const dcufleet::v1::CordonNodeRequest* req,
                                                       dcufleet::v1::NodeView* resp) {
  absl::Status s = common::CheckName("node", req->name());
  if (!s.ok()) return Done(ctx, s);
  std::optional<dcufleet::v1::NodeCordon> cordon;
  if (req->has_cordon()) {
    s = common::CheckText("cordon reason", req->cordon().reason(), FleetState::kMaxDrainReason);
    if (!s.ok()) return Done(ctx, s);
    cordon = req->cordon();
    // The controller's clock, not the caller's.
    cordon->set_since_ms(absl::ToUnixMillis(absl::Now()));
  }
  FleetState* fleet = deps_.fleet;
  const std::string name = req->name();
  // A store write: off the gRPC thread, as a reap's command is.
  return Async(ctx, commands_, [fleet, name, cordon, resp]() -> absl::Status {
    absl::StatusOr<dcufleet::v1::NodeView> view = fleet->SetCordon(name, cordon);
    if (!view.ok()) return view.status();
    *resp = *std::move(view);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* FleetServiceImpl::ReapNode(grpc::CallbackServerContext* ctx,
                                                     const dcufleet::v1::ReapNodeRequest* req,
                                                     dcufleet::v1::ReapNodeResponse* resp) {
  absl::Status s = common::CheckName("node", req->node());
  if (!s.ok()) return Done(ctx, s);
  if (req->grace_ms() < 0 || req->grace_ms() > 600000) {
    return Done(ctx, absl::InvalidArgumentError("grace_ms must be between 0 and 600000"));
  }
  dcufleet::v1::ReapNodeRequest copy = *req;
  FleetState* fleet = deps_.fleet;
  EventLog* events = deps_.events;
  return Async(ctx, commands_, [fleet, events, copy, resp]() -> absl::Status {
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
  if (absl::Status s = common::ValidateDeploymentSpec(req->spec()); !s.ok()) return Done(ctx, s);
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

// The most deployments one DeployMany takes: a bulk submission, not a way
// to hold the writer for seconds.
constexpr int kMaxDeployManyRequests = 10000;

grpc::ServerUnaryReactor* FleetServiceImpl::DeployMany(grpc::CallbackServerContext* ctx,
                                                       const dcufleet::v1::DeployManyRequest* req,
                                                       dcufleet::v1::DeployManyResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  if (req->requests_size() > kMaxDeployManyRequests) {
    return Done(ctx, absl::InvalidArgumentError(absl::StrCat(
                         "requests: ", req->requests_size(), " deployments; at most ",
                         kMaxDeployManyRequests, " per DeployMany")));
  }
  for (int i = 0; i < req->requests_size(); ++i) {
    if (req->requests(i).dry_run()) {
      return Done(ctx, absl::InvalidArgumentError(absl::StrCat(
                           "requests[", i, "].dry_run: DeployMany does not plan dry runs (use Deploy)")));
    }
  }
  const int n = req->requests_size();
  if (n == 0) return Done(ctx, absl::OkStatus());
  for (int i = 0; i < n; ++i) resp->add_results();
  // One RPC, n deployments queued to the group-committing writer together
  // (they commit in one or a few transactions); answered when the last is
  // durable or refused. Each result is written by its own callback only.
  auto* reactor = ctx->DefaultReactor();
  auto left = std::make_shared<std::atomic<int>>(n);
  for (int i = 0; i < n; ++i) {
    const dcufleet::v1::DeployRequest& one = req->requests(i);
    dcufleet::v1::DeployManyResult* result = resp->mutable_results(i);
    absl::Status valid = common::ValidateDeploymentSpec(one.spec());
    auto done = [reactor, result, left](absl::StatusOr<dcufleet::v1::DeployResponse> r) {
      result->set_code(static_cast<int32_t>(r.status().code()));
      if (r.ok()) {
        *result->mutable_response() = std::move(*r);
      } else {
        result->set_message(std::string(r.status().message()));
      }
      if (left->fetch_sub(1) == 1) reactor->Finish(grpc::Status::OK);
    };
    if (!valid.ok()) {
      done(absl::InvalidArgumentError(absl::StrCat("requests[", i, "]: ", valid.message())));
      continue;
    }
    deps_.deployments->DeployAsync(one.spec(), /*dry_run=*/false, std::move(done));
  }
  return reactor;
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListDeployments(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::ListDeploymentsRequest*,
    dcufleet::v1::ListDeploymentsResponse* resp) {
  auto r = ReadDeployments(deps_);
  if (r.ok()) *resp = std::move(*r);
  return Done(ctx, r.status());
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetDeployment(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::GetDeploymentRequest* req,
    dcufleet::v1::GetDeploymentResponse* resp) {
  auto r = ReadDeployment(deps_, req->name());
  if (r.ok()) *resp = std::move(*r);
  return Done(ctx, r.status());
}

grpc::ServerWriteReactor<dcufleet::v1::GetDeploymentResponse>* FleetServiceImpl::WatchDeployment(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::WatchDeploymentRequest* req) {
  absl::Status s = common::CheckName("deployment name", req->name());
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
  auto* watch = new WatchReactor(deps_.deployments, deps_.events, req->name(), req->after_revision());
  watch->Start(watches_);
  return watch;
}

grpc::ServerWriteReactor<dcufleet::v1::ServingSnapshot>* FleetServiceImpl::WatchServing(
    grpc::CallbackServerContext*, const dcufleet::v1::WatchServingRequest* req) {
  return StartServingWatch(deps_.deployments, deps_.fleet, deps_.api_keys, watches_, *req);
}

grpc::ServerUnaryReactor* FleetServiceImpl::DeleteDeployment(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::DeleteDeploymentRequest* req,
    dcufleet::v1::DeleteDeploymentResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  absl::Status s = common::CheckName("deployment name", req->name());
  if (!s.ok()) return Done(ctx, s);
  // Answered when the mark is durable, without holding a gRPC thread
  // meanwhile (the writer commits concurrent deletes together).
  auto* reactor = ctx->DefaultReactor();
  deps_.deployments->DeleteAsync(req->name(), [reactor, resp](absl::StatusOr<dcufleet::v1::Deployment> d) {
    if (d.ok()) *resp->mutable_deployment() = std::move(*d);
    reactor->Finish(ToGrpcStatus(d.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* FleetServiceImpl::ScaleDeployment(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::ScaleDeploymentRequest* req,
    dcufleet::v1::ScaleDeploymentResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  absl::Status s = common::CheckName("deployment name", req->name());
  if (!s.ok()) return Done(ctx, s);
  // Answered from the writer thread, as a delete: no gRPC thread waits
  // for the store.
  auto* reactor = ctx->DefaultReactor();
  deps_.deployments->ScaleAsync(
      req->name(), req->replicas(),
      [reactor, resp](absl::StatusOr<dcufleet::v1::ScaleDeploymentResponse> r) {
        if (r.ok()) *resp = std::move(*r);
        reactor->Finish(ToGrpcStatus(r.status()));
      });
  return reactor;
}

grpc::ServerUnaryReactor* FleetServiceImpl::CreateApiKey(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::CreateApiKeyRequest* req,
    dcufleet::v1::CreateApiKeyResponse* resp) {
  if (!deps_.api_keys) return Done(ctx, absl::UnavailableError("API keys are not managed here"));
  if (absl::Status s = common::CheckName("API key name", req->name()); !s.ok()) return Done(ctx, s);
  if (req->models_size() > 256) {
    return Done(ctx, absl::InvalidArgumentError("models: at most 256 per key"));
  }
  dcufleet::v1::ApiKey key;
  key.set_name(req->name());
  for (const auto& m : req->models()) {
    // A model name in a scope is a deployment or served model name; the
    // scope is stored comma-separated, so a comma cannot be in one.
    if (m.empty() || m.size() > 253 || m.find_first_of(", \t\r\n") != std::string::npos) {
      return Done(ctx, absl::InvalidArgumentError(absl::StrCat(
                           "models: '", m.substr(0, 64),
                           "' is not a deployment or served model name (no commas or spaces)")));
    }
    key.add_models(m);
  }
  key.set_all_models(key.models().empty());
  auto random = common::RandomHex(24);
  if (!random.ok()) return Done(ctx, random.status());
  const std::string secret = absl::StrCat("dcu-", *random);
  key.set_sha256_hex(common::Sha256Hex(secret));
  key.set_created_at_ms(absl::ToUnixMillis(absl::Now()));
  if (absl::Status s = deps_.api_keys->CreateApiKey(key); !s.ok()) return Done(ctx, s);
  if (deps_.events) {
    (void)deps_.events->AppendEvent(
        {0, key.created_at_ms(), "apikey", key.name(), "Normal", "Created",
         key.all_models() ? "scope: every model"
                          : absl::StrCat("scope: ", absl::StrJoin(key.models(), ", "))});
  }
  key.clear_sha256_hex();
  *resp->mutable_key() = std::move(key);
  resp->set_secret(secret);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListApiKeys(grpc::CallbackServerContext* ctx,
                                                        const dcufleet::v1::ListApiKeysRequest*,
                                                        dcufleet::v1::ListApiKeysResponse* resp) {
  if (!deps_.api_keys) return Done(ctx, absl::UnavailableError("API keys are not managed here"));
  auto keys = deps_.api_keys->ListApiKeys();
  if (!keys.ok()) return Done(ctx, keys.status());
  for (auto& k : *keys) {
    k.clear_sha256_hex();
    *resp->add_keys() = std::move(k);
  }
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::RevokeApiKey(grpc::CallbackServerContext* ctx,
                                                         const dcufleet::v1::RevokeApiKeyRequest* req,
                                                         dcufleet::v1::RevokeApiKeyResponse*) {
  if (!deps_.api_keys) return Done(ctx, absl::UnavailableError("API keys are not managed here"));
  if (absl::Status s = common::CheckName("API key name", req->name()); !s.ok()) return Done(ctx, s);
  absl::Status s = deps_.api_keys->RevokeApiKey(req->name());
  if (s.ok() && deps_.events) {
    (void)deps_.events->AppendEvent({0, absl::ToUnixMillis(absl::Now()), "apikey", req->name(),
                                     "Normal", "Revoked", "gateways refuse it within a second"});
  }
  return Done(ctx, s);
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListEvents(grpc::CallbackServerContext* ctx,
                                                       const dcufleet::v1::ListEventsRequest* req,
                                                       dcufleet::v1::ListEventsResponse* resp) {
  auto r = ReadEvents(deps_, *req);
  if (r.ok()) *resp = std::move(*r);
  return Done(ctx, r.status());
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetLogs(grpc::CallbackServerContext* ctx,
                                                    const dcufleet::v1::GetLogsRequest* req,
                                                    dcufleet::v1::GetLogsResponse* resp) {
  if (!deps_.deployments) return Done(ctx, absl::UnavailableError("deployments are not enabled"));
  absl::Status s = common::CheckName("deployment name", req->deployment());
  if (!s.ok()) return Done(ctx, s);
  if (!req->instance_id().empty()) {
    s = common::CheckText("instance_id", req->instance_id(), 128);
    if (!s.ok()) return Done(ctx, s);
  }
  if (req->tail_lines() < 0 || req->tail_lines() > 100000) {
    return Done(ctx, absl::InvalidArgumentError("tail_lines must be between 0 and 100000"));
  }
  if (req->has_replica() && (req->replica() < 0 || req->replica() >= 256)) {
    return Done(ctx, absl::InvalidArgumentError("replica must be between 0 and 255"));
  }
  if (req->has_since_offset() && req->since_offset() < -1) {
    return Done(ctx, absl::InvalidArgumentError("since_offset must be -1 (the tail) or a position >= 0"));
  }
  if (!req->offset_instance_id().empty()) {
    s = common::CheckText("offset_instance_id", req->offset_instance_id(), 128);
    if (!s.ok()) return Done(ctx, s);
  }
  DeployController::AttemptSelector which;
  which.instance_id = req->instance_id();
  if (req->has_replica()) which.replica = req->replica();
  which.previous = req->previous();
  auto found = deps_.deployments->FindAttempt(req->deployment(), which);
  if (!found.ok()) return Done(ctx, found.status());
  if (!found->attempt) {
    if (!req->has_since_offset()) return Done(ctx, absl::NotFoundError(found->not_launched));
    // A follower waits for the first attempt (`dcuctl deploy` then `logs
    // -f` at once, a model still copying): everything it will write comes
    // after the follower asked, so it reads from the first line.
    resp->set_waiting(found->not_launched);
    resp->set_next_offset(0);
    return Done(ctx, absl::OkStatus());
  }
  dcufleet::v1::Attempt a = *std::move(found->attempt);
  std::string at_zero = std::move(found->scaled_to_zero);
  FleetState* fleet = deps_.fleet;
  int tail = req->tail_lines() ? req->tail_lines() : 200;
  // A position belongs to the instance it came from: when the caller
  // followed another one, this instance's log is read from its start.
  std::optional<int64_t> since;
  if (req->has_since_offset()) {
    const bool another = !req->offset_instance_id().empty() && req->offset_instance_id() != a.instance_id();
    since = another ? 0 : req->since_offset();
  }
  return Async(ctx, commands_, [fleet, a, tail, since, resp, at_zero]() -> absl::Status {
    resp->set_instance_id(a.instance_id());
    resp->set_node(a.placement().node());
    dcufleet::v1::Command cmd;
    cmd.mutable_fetch_logs()->set_instance_id(a.instance_id());
    cmd.mutable_fetch_logs()->set_tail_lines(tail);
    if (since) cmd.mutable_fetch_logs()->set_since_offset(*since);
    auto r = fleet->RunCommand(a.placement().node(), cmd, absl::Seconds(15));
    if (r.ok() && r->ok()) {
      auto j = nlohmann::json::parse(r->payload_json(), nullptr, false);
      if (j.is_object() && j.contains("lines") && j["lines"].is_array()) {
        for (const auto& l : j["lines"]) {
          if (l.is_string()) resp->add_lines(l.get<std::string>());
        }
        // Positions only when asked for and well formed (a node's word).
        if (since && j.contains("offset") && j["offset"].is_number_integer() &&
            j["offset"].get<int64_t>() >= 0) {
          resp->set_next_offset(j["offset"].get<int64_t>());
          if (j.contains("skipped_bytes") && j["skipped_bytes"].is_number_integer()) {
            resp->set_skipped_bytes(std::max<int64_t>(-1, j["skipped_bytes"].get<int64_t>()));
          }
          // A node's word, bounded as the agent bounds it (the client
          // makes it terminal-safe).
          if (j.contains("partial") && j["partial"].is_string()) {
            std::string partial = j["partial"].get<std::string>();
            if (partial.size() > common::kMaxLiveLineBytes) {
              partial.erase(0, partial.size() - common::kMaxLiveLineBytes);
            }
            resp->set_partial(std::move(partial));
          }
        }
        return absl::OkStatus();
      }
    }
    // The node is away or the log is gone: the tail kept with the attempt,
    // cut to what was asked (it printed all 51 stored lines for --tail 5).
    const int kept = a.log_tail_size();
    for (int i = std::max(0, kept - tail); i < kept; ++i) resp->add_lines(a.log_tail(i));
    if (!resp->lines().empty()) return absl::OkStatus();
    // Both name the node ("node 'n' is not connected", "instance 'i' is
    // not known on node 'n'").
    const std::string why = r.ok() ? r->message() : std::string(r.status().message());
    if (since && a.ended_at_ms() == 0) {
      // A follower of an attempt that has not ended waits: its agent may
      // still be preparing the launch (a model fetch, shard checks, an
      // image pull: minutes with no instance to read) or be away for a
      // restart. It ends with the attempt (a failure, a lost node), after
      // which this answers from the stored tail or fails as below.
      resp->set_waiting(why);
      if (*since >= 0) {
        resp->set_next_offset(*since);
      } else if ((a.phase() == dcufleet::v1::INSTANCE_PENDING ||
                  a.phase() == dcufleet::v1::INSTANCE_PHASE_UNSPECIFIED) &&
                 a.readopted_from() == 0) {
        // Not started yet (a re-adopted instance has run all along): every
        // line it writes comes after the follower asked, so it reads them
        // all from the first, not a tail of them.
        resp->set_next_offset(0);
      }
      return absl::OkStatus();
    }
    // Stopped on purpose (a scale to zero, a removed replica): the node
    // forgot it with its log, and only a failed attempt keeps a tail. Not
    // there, rather than a node to try again.
    if (a.ended_at_ms() != 0 && a.phase() == dcufleet::v1::INSTANCE_STOPPED) {
      if (!at_zero.empty()) return absl::NotFoundError(at_zero);
      return absl::NotFoundError(absl::StrCat("instance '", a.instance_id(),
                                              "' was stopped on purpose and its log went with it (",
                                              why, ")"));
    }
    return absl::UnavailableError(absl::StrCat("no logs for instance '", a.instance_id(), "': ", why));
  });
}

}  // namespace dcu::controller

#include "modelkit/stack_view.h"
#include "controller/store/catalog_import.h"

namespace dcu::controller {

using modelkit::BuildListStacksResponse;
using modelkit::MakeStackView;

grpc::ServerUnaryReactor* FleetServiceImpl::ListStacks(grpc::CallbackServerContext* ctx,
                                                       const dcufleet::v1::ListStacksRequest* req,
                                                       dcufleet::v1::ListStacksResponse* resp) {
  auto r = ReadStacks(deps_, *req);
  if (r.ok()) *resp = std::move(*r);
  return Done(ctx, r.status());
}

grpc::ServerUnaryReactor* FleetServiceImpl::GetStack(grpc::CallbackServerContext* ctx,
                                                     const dcufleet::v1::GetStackRequest* req,
                                                     dcufleet::v1::GetStackResponse* resp) {
  if (!deps_.catalog) return Done(ctx, absl::UnavailableError("the catalog is not enabled"));
  absl::Status s = common::CheckName("stack id", req->id());
  if (!s.ok()) return Done(ctx, s);
  if (req->evidence_limit() < 0 || req->evidence_limit() > 10000) {
    return Done(ctx, absl::InvalidArgumentError("evidence_limit must be between 0 and 10000"));
  }
  auto stack = deps_.catalog->GetStack(req->id());
  if (!stack.ok()) {
    if (stack.status().code() == absl::StatusCode::kNotFound) {
      return Done(ctx, absl::NotFoundError(absl::StrCat("stack '", req->id(),
                                                        "' not found (dcuctl get stacks)")));
    }
    return Done(ctx, stack.status());
  }
  EvidenceFilter all;
  all.stack_id = req->id();
  auto evidence = deps_.catalog->ListEvidence(all);
  if (!evidence.ok()) return Done(ctx, evidence.status());
  auto envs = deps_.catalog->ListNodeEnvironments(req->id());
  if (!envs.ok()) return Done(ctx, envs.status());
  *resp->mutable_view() = MakeStackView(*stack, *evidence, *envs);
  EvidenceFilter recent = all;
  recent.newest_first = true;
  recent.limit = req->evidence_limit() ? req->evidence_limit() : 20;
  auto rows = deps_.catalog->ListEvidence(recent);
  if (rows.ok()) {
    for (auto& e : *rows) *resp->add_evidence() = std::move(e);
  }
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::ImportCatalog(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::ImportCatalogRequest* req,
    dcufleet::v1::ImportCatalogResponse* resp) {
  if (!deps_.catalog) return Done(ctx, absl::UnavailableError("the catalog is not enabled"));
  if (req->files().empty()) return Done(ctx, absl::InvalidArgumentError("files: none given"));
  for (const auto& f : req->files()) {
    if (f.name().size() > 1024 || f.text().size() > (8 << 20)) {
      return Done(ctx, absl::InvalidArgumentError(
                           "files: a name over 1 KiB or a text over 8 MiB was refused"));
    }
  }
  auto r = ImportCatalogRequestInto(*deps_.catalog, *req, absl::ToUnixMillis(absl::Now()));
  // An import parses up to megabytes at once; glibc keeps what it freed in
  // its arenas, so hand the transient heap back rather than keep the peak.
  malloc_trim(0);
  if (!r.ok()) return Done(ctx, r.status());
  *resp = std::move(*r);
  if (!req->dry_run() && deps_.on_catalog_changed) deps_.on_catalog_changed();
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListModels(grpc::CallbackServerContext* ctx,
                                                       const dcufleet::v1::ListModelsRequest*,
                                                       dcufleet::v1::ListModelsResponse* resp) {
  if (!deps_.catalog) return Done(ctx, absl::UnavailableError("the catalog is not enabled"));
  auto models = deps_.catalog->ListModels();
  if (!models.ok()) return Done(ctx, models.status());
  for (auto& m : *models) *resp->add_models() = std::move(m);
  auto dirs = deps_.catalog->ListNodeModelDirectories("");
  if (dirs.ok()) {
    // A forgotten node's directories (its job ended long ago) are no copy
    // anyone can use; they stay in the catalog until a node of that name
    // reports again.
    std::set<std::string> known;
    if (deps_.fleet) {
      for (const auto& n : deps_.fleet->Snapshot()) known.insert(n->name());
    }
    for (auto& d : *dirs) {
      if (!deps_.fleet || known.count(d.node())) *resp->add_directories() = std::move(d);
    }
  }
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::ListEvidence(
    grpc::CallbackServerContext* ctx, const dcufleet::v1::ListEvidenceRequest* req,
    dcufleet::v1::ListEvidenceResponse* resp) {
  if (!deps_.catalog) return Done(ctx, absl::UnavailableError("the catalog is not enabled"));
  if (req->limit() < 0 || req->limit() > 100000) {
    return Done(ctx, absl::InvalidArgumentError("limit must be between 0 and 100000"));
  }
  EvidenceFilter f;
  f.stack_id = req->stack_id();
  f.arch = req->arch();
  f.model = req->model();
  f.limit = req->limit() ? req->limit() : 200;
  f.newest_first = true;
  auto rows = deps_.catalog->ListEvidence(f);
  if (!rows.ok()) return Done(ctx, rows.status());
  for (auto& e : *rows) *resp->add_evidence() = std::move(e);
  return Done(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* FleetServiceImpl::CopyModel(grpc::CallbackServerContext* ctx,
                                                      const dcufleet::v1::CopyModelRequest* req,
                                                      dcufleet::v1::CopyModelResponse* resp) {
  if (absl::Status s = common::CheckName("node", req->to_node()); !s.ok()) return Done(ctx, s);
  if (!req->from_node().empty()) {
    if (absl::Status s = common::CheckName("node", req->from_node()); !s.ok()) return Done(ctx, s);
  }
  if (req->model().empty() || req->model().size() > 255 || req->model().find('/') != std::string::npos) {
    return Done(ctx, absl::InvalidArgumentError("model must be a catalog name or a directory name"));
  }
  if (!req->from_dir().empty() && !req->from_node().empty()) {
    return Done(ctx, absl::InvalidArgumentError("from_dir and from_node exclude each other: copy from one"));
  }
  dcufleet::v1::CopyModelRequest copy = *req;
  FleetState* fleet = deps_.fleet;
  EventLog* events = deps_.events;
  CatalogStore* catalog = deps_.catalog;
  const ModelOrigins base_origins = deps_.model_origins;
  return Async(ctx, commands_, [fleet, events, catalog, copy, base_origins, resp]() -> absl::Status {
    std::vector<dcufleet::v1::NodeModelDirectory> dirs;
    if (catalog) {
      auto d = catalog->ListNodeModelDirectories("");
      if (d.ok()) dirs = *std::move(d);
    }
    // The model's directory in a shared directory or on a mirror is the
    // last part of the catalog's hf_repo (else the name given).
    std::string repo;
    if (catalog) {
      auto m = catalog->GetModel(copy.model());
      if (m.ok()) repo = m->hf_repo();
    }
    absl::StatusOr<ModelCopyPlan> plan;
    if (!copy.from_dir().empty()) {
      plan = PlanSharedDirCopy(copy.model(), repo, copy.from_dir());
    } else {
      const std::vector<dcufleet::v1::NodeView> nodes = fleet->ListNodes();
      plan = PickModelSource(copy.model(), copy.to_node(), copy.from_node(), nodes, dirs);
      if (absl::IsNotFound(plan.status()) && copy.from_node().empty()) {
        // No node has it: the fleet's origins, as a deploy would use them.
        ModelOrigins origins = base_origins;
        origins.repo = repo;
        for (const auto& n : nodes) {
          if (n.name() != copy.to_node()) continue;
          // A person asking: after every origin failed, the first again.
          plan = PlanOriginCopy(copy.model(), origins, n, plan.status(), /*person_retries=*/true);
        }
      }
    }
    if (!plan.ok()) return plan.status();
    dcufleet::v1::Command cmd;
    *cmd.mutable_fetch_model() = plan->ToCommand();
    auto r = fleet->RunCommand(copy.to_node(), cmd, absl::Seconds(8));  // within dcuctl's 10 s
    if (!r.ok()) return r.status();
    if (!r->ok()) return absl::FailedPreconditionError(r->message());
    resp->set_model_dir(plan->model_dir);
    resp->set_source_node(plan->source_node);
    resp->set_source_address(plan->SourceAddress());
    resp->set_message(r->message());
    if (events) {
      (void)events->AppendEvent({0, absl::ToUnixMillis(absl::Now()), "node", copy.to_node(), "Normal",
                                 "ModelCopyStarted",
                                 absl::StrCat("copying ", plan->model_dir, " from ", plan->From())});
    }
    return absl::OkStatus();
  });
}

}  // namespace dcu::controller
