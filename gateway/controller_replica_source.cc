#include "gateway/controller_replica_source.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/leader.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/status_util.h"
#include "common/tls_config.h"

namespace dcu::gateway {

absl::StatusOr<ServingSet> ServingSetOf(const dcufleet::v1::ServingSnapshot& snapshot) {
  ServingSet set;
  set.revision = snapshot.revision();
  for (const auto& m : snapshot.models()) {
    if (m.deployment().empty()) return absl::InvalidArgumentError("a model without a deployment name");
    ServedModel model;
    model.deployment = m.deployment();
    model.served_model_name = m.served_model_name();
    model.scaled_to_zero = m.scaled_to_zero();
    for (const auto& r : m.replicas()) {
      if (r.host().empty() || r.port() <= 0 || r.port() > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("deployment '", m.deployment(),
                                                       "': replica ", r.index(),
                                                       " has no usable host:port"));
      }
      Replica rep;
      rep.index = r.index();
      rep.node = r.node();
      rep.host = r.host();
      rep.port = r.port();
      rep.ready = r.ready();
      rep.load.running = r.load().running();
      rep.load.waiting = r.load().waiting();
      rep.load.kv_cache_usage = r.load().kv_cache_usage();
      rep.load.scraped_at_ms = r.load().scraped_at_ms();
      model.replicas.push_back(std::move(rep));
    }
    set.models.push_back(std::move(model));
  }
  if (!snapshot.api_keys().empty()) {
    auto keys = std::make_shared<ApiKeyStore>();
    for (const auto& k : snapshot.api_keys()) {
      std::vector<std::string> models(k.models().begin(), k.models().end());
      if (absl::Status s = keys->Add(k.name(), k.sha256_hex(), k.all_models(), models); !s.ok()) {
        return s;
      }
    }
    set.managed_keys = std::move(keys);
  }
  return set;
}

namespace {

// "a:7070,b:7070" -> its addresses.
std::vector<std::string> ControllerAddresses(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(a));
  }
  return out;
}

}  // namespace

ControllerReplicaSource::ControllerReplicaSource(
    ControllerSourceOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials)
    : options_(std::move(options)), credentials_(std::move(credentials)) {
  for (const auto& a : ControllerAddresses(options_.address)) IndexOf(a);
}

size_t ControllerReplicaSource::IndexOf(const std::string& address) {
  for (size_t i = 0; i < addresses_.size(); ++i) {
    if (addresses_[i] == address) return i;
  }
  grpc::ChannelArguments args = common::DefaultChannelArguments(64 << 20);
  // Reconnect promptly after the controller comes back: the back-off is ours.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  addresses_.push_back(address);
  stubs_.push_back(
      dcufleet::v1::FleetService::NewStub(grpc::CreateCustomChannel(address, credentials_, args)));
  return addresses_.size() - 1;
}

absl::Status ControllerReplicaSource::Start(UpdateFn on_update) {
  thread_ = std::thread([this, on_update = std::move(on_update)] { Run(on_update); });
  return absl::OkStatus();
}

void ControllerReplicaSource::Stop() {
  stop_.store(true);
  {
    absl::MutexLock lock(&mu_);
    if (active_) active_->TryCancel();
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

bool ControllerReplicaSource::WatchOnce(const UpdateFn& on_update, std::string* why,
                                        std::string* leader) {
  grpc::ClientContext ctx;
  {
    absl::MutexLock lock(&mu_);
    if (stop_.load()) return false;
    active_ = &ctx;
  }
  dcufleet::v1::WatchServingRequest req;
  req.set_resend_after_ms(static_cast<int32_t>(absl::ToInt64Milliseconds(options_.resend_after)));
  const std::string& address = addresses_[current_];
  auto reader = stubs_[current_]->WatchServing(&ctx, req);
  bool delivered = false;
  dcufleet::v1::ServingSnapshot snapshot;
  // A watchdog: a stream silent for three resend periods is dead (a
  // partition does not always reset the connection).
  std::atomic<int64_t> last_read_ms{absl::ToUnixMillis(absl::Now())};
  std::atomic<bool> reading{true};
  std::thread watchdog([&] {
    absl::MutexLock lock(&mu_);
    while (reading.load() && !stop_.load()) {
      wake_.WaitWithTimeout(&mu_, absl::Milliseconds(200));
      if (absl::ToUnixMillis(absl::Now()) - last_read_ms.load() >
          3 * absl::ToInt64Milliseconds(options_.resend_after)) {
        ctx.TryCancel();
        break;
      }
    }
  });
  while (reader->Read(&snapshot)) {
    last_read_ms.store(absl::ToUnixMillis(absl::Now()));
    auto set = ServingSetOf(snapshot);
    if (!set.ok()) {
      DCU_LOG_WARN("controller sent an unusable snapshot (", set.status().message(),
                   "); keeping the previous replicas");
      continue;
    }
    if (!delivered && in_outage_) {
      DCU_LOG_INFO("controller '", address, "' is back after ",
                   absl::FormatDuration(absl::Trunc(absl::Now() - outage_since_,
                                                    absl::Milliseconds(100))));
    }
    if (!delivered && delivering_from_ != address) {
      // Which controller the replicas come from: the leader, with several.
      DCU_LOG_INFO("receiving replicas from controller '", address, "'");
      delivering_from_ = address;
    }
    in_outage_ = false;
    delivered = true;
    on_update(*std::move(set));
  }
  grpc::Status s = reader->Finish();
  reading.store(false);
  {
    absl::MutexLock lock(&mu_);
    wake_.SignalAll();
  }
  watchdog.join();
  {
    absl::MutexLock lock(&mu_);
    active_ = nullptr;
  }
  *why = s.ok() ? "the stream ended" : s.error_message();
  // A standby answers every call UNAVAILABLE, naming the leader.
  leader->clear();
  const auto& trailers = ctx.GetServerTrailingMetadata();
  if (auto it = trailers.find(common::kLeaderMetadataKey); it != trailers.end()) {
    leader->assign(it->second.data(), it->second.size());
  }
  return delivered;
}

void ControllerReplicaSource::Run(UpdateFn on_update) {
  std::mt19937_64 rng(std::random_device{}());
  absl::Duration backoff = options_.min_backoff;
  int redirects = 0;
  while (!stop_.load()) {
    std::string why, leader;
    const std::string address = addresses_[current_];
    bool delivered = WatchOnce(on_update, &why, &leader);
    if (stop_.load()) break;
    if (delivered) {
      backoff = options_.min_backoff;
      redirects = 0;
    }
    if (!in_outage_ && (delivered || leader.empty())) {
      // Once per outage, not per retry.
      in_outage_ = true;
      outage_since_ = absl::Now();
      DCU_LOG_WARN("lost the controller '", address, "' (", why,
                   "); serving the last known replicas and retrying");
    }
    // A standby named the leader: go there now. Bounded, so two standbys
    // naming each other (a leader that just went) fall back to the back-off.
    if (!leader.empty() && leader != address && redirects < 3) {
      ++redirects;
      current_ = IndexOf(leader);
      DCU_LOG_INFO("controller '", address, "' stands by; the leader is '", leader, "'");
      continue;
    }
    redirects = 0;
    current_ = (current_ + 1) % addresses_.size();
    // Full jitter: gateways that lost the same controller do not return in step.
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    absl::Duration sleep = backoff * jitter(rng);
    backoff = std::min(backoff * 2, options_.max_backoff);
    absl::MutexLock lock(&mu_);
    absl::Time until = absl::Now() + sleep;
    while (!stop_.load() && absl::Now() < until) wake_.WaitWithDeadline(&mu_, until);
  }
}

absl::StatusOr<std::unique_ptr<ReplicaSource>> MakeControllerReplicaSource(
    const ControllerSourceOptions& o) {
  if (ControllerAddresses(o.address).empty()) {
    return absl::InvalidArgumentError("--controller names no address");
  }
  common::ClientTlsFiles files{o.tls_ca, o.tls_cert, o.tls_key};
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!files.enabled()) {
    if (!o.token_file.empty()) {
      return absl::InvalidArgumentError(
          "--token-file needs TLS (--tls-ca): a bearer token must not travel in plaintext");
    }
    for (const std::string& address : ControllerAddresses(o.address)) {
      auto hp = common::ParseHostPort(address);
      bool local = address.rfind("unix:", 0) == 0 || (hp.ok() && common::IsLoopbackHost(hp->host));
      if (!hp.ok() && address.rfind("unix:", 0) != 0) {
        return absl::InvalidArgumentError(absl::StrCat("--controller '", address,
                                                       "' is not HOST:PORT (",
                                                       hp.status().message(), ")"));
      }
      if (!local && !o.insecure) {
        return absl::InvalidArgumentError(absl::StrCat(
            "refusing to talk to controller '", address,
            "' in plaintext; pass --tls-ca (and --tls-cert/--tls-key or --token-file) or "
            "--insecure"));
      }
    }
    creds = grpc::InsecureChannelCredentials();
  } else {
    std::string token;
    if (!o.token_file.empty()) {
      auto t = common::ReadTokenFile(o.token_file);
      if (!t.ok()) return t.status();
      token = *t;
    }
    auto made = common::MakeChannelCredentials(files, token);
    if (!made.ok()) return made.status();
    creds = *made;
  }
  return std::unique_ptr<ReplicaSource>(
      std::make_unique<ControllerReplicaSource>(o, std::move(creds)));
}

}  // namespace dcu::gateway
