#include "agent/transfer/model_transfers.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agent/fetch/http_model_source.h"
#include "agent/transfer/transfer_service.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/units.h"

namespace dcu::agent {

namespace {

// "/shared/models/" and "/shared//models" are the same root.
std::string NormalRoot(const std::string& dir) {
  std::string s = std::filesystem::path(dir).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

ModelTransfers::ModelTransfers(std::string model_root, CredentialsFn credentials, bool tls,
                               std::function<void()> on_finished, std::vector<std::string> shared_roots)
    : model_root_(std::move(model_root)),
      credentials_(std::move(credentials)),
      tls_(tls),
      on_finished_(std::move(on_finished)),
      shared_roots_([&] {
        for (auto& r : shared_roots) r = NormalRoot(r);
        return std::move(shared_roots);
      }()),
      fetcher_(model_root_) {}

ModelTransfers::~ModelTransfers() { Shutdown(); }

absl::Status ModelTransfers::Start(const dcufleet::v1::FetchModelCommand& command) {
  if (model_root_.empty()) {
    return absl::FailedPreconditionError("this agent has no --model-root to copy a model into");
  }
  if (absl::Status s = CheckModelDirName(command.model_dir(), "model_dir"); !s.ok()) return s;
  // The source is made here, so a bad command is refused at once rather
  // than failing on the copy's thread.
  std::shared_ptr<ModelSource> source;
  std::string source_name;  // what the transfer reports as its source address
  if (!command.source_dir().empty()) {
    // A shared file system's mount: read in place, only from a root this
    // agent was told to trust (the controller names the path; the node
    // decides whether it may be read).
    const std::string dir = NormalRoot(command.source_dir());
    if (!std::filesystem::path(dir).is_absolute() ||
        std::find(shared_roots_.begin(), shared_roots_.end(), dir) == shared_roots_.end()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "source_dir '", command.source_dir(), "' is not one of this agent's --shared-model-root (",
          shared_roots_.empty() ? "none given" : absl::StrJoin(shared_roots_, ", "),
          "); start the agent with --shared-model-root ", dir, " to copy from it"));
    }
    source = std::make_shared<DirectoryModelSource>(dir);
    source_name = dir;
  } else if (!command.source_url().empty()) {
    // An HTTP mirror laid out like a Hugging Face repository.
    auto http = HttpModelSource::Create(command.source_url(), command.source_repo());
    if (!http.ok()) return http.status();
    source = *std::move(http);
  } else if (!common::ParseHostPort(command.source_address()).ok()) {
    return absl::InvalidArgumentError(absl::StrCat("source_address '", command.source_address(),
                                                   "' is not HOST:PORT"));
  }
  if (!source) {
    source = std::make_shared<PeerModelSource>(command.source_address(), credentials_(command.source_address()),
                                               command.source_node(), tls_);
  }
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(model_root_) / command.model_dir(), ec)) {
    return absl::AlreadyExistsError(absl::StrCat("model directory '", command.model_dir(), "' is already in ",
                                                 model_root_));
  }
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the agent is stopping");
  auto it = transfers_.find(command.model_dir());
  if (it != transfers_.end() && it->second.state() == dcufleet::v1::MODEL_TRANSFER_RUNNING) {
    return absl::AbortedError(absl::StrCat("a copy of '", command.model_dir(), "' from ",
                                           it->second.source_node().empty()
                                               ? it->second.source_address()
                                               : absl::StrCat("node '", it->second.source_node(), "'"),
                                           " is already running"));
  }
  dcufleet::v1::ModelTransfer t;
  t.set_model_dir(command.model_dir());
  t.set_source_node(command.source_node());
  t.set_source_address(!source_name.empty()           ? source_name
                       : command.source_url().empty() ? command.source_address()
                                                      : absl::StrCat(command.source_url(), "/", command.source_repo()));
  t.set_state(dcufleet::v1::MODEL_TRANSFER_RUNNING);
  t.set_eta_ms(-1);
  t.set_started_at_ms(absl::ToUnixMillis(absl::Now()));
  transfers_[command.model_dir()] = t;
  threads_.emplace_back([this, command, source] { Run(command, *source); });
  return absl::OkStatus();
}

void ModelTransfers::Run(dcufleet::v1::FetchModelCommand command, ModelSource& source) {
  const std::string dir = command.model_dir();
  FetchOptions o;
  o.progress = [&](const FetchProgress& p) {
    absl::MutexLock lock(&mu_);
    auto& t = transfers_[dir];
    t.set_bytes_done(p.bytes_done);
    t.set_bytes_total(p.bytes_total);
    t.set_bytes_resumed(p.bytes_resumed);
    t.set_bytes_per_second(p.bytes_per_second);
    t.set_eta_ms(p.eta == absl::InfiniteDuration() ? -1 : absl::ToInt64Milliseconds(p.eta));
    t.set_file(p.file);
    t.set_files_done(p.files_done);
    t.set_files_total(p.files_total);
  };
  o.cancelled = [this] { return stopping_.load(); };
  DCU_LOG_INFO("copying model '", dir, "' from ", source.Describe(), " into ", model_root_);
  absl::StatusOr<FetchResult> r = fetcher_.Fetch(source, dir, o);
  {
    absl::MutexLock lock(&mu_);
    auto& t = transfers_[dir];
    t.set_finished_at_ms(absl::ToUnixMillis(absl::Now()));
    t.set_file("");
    if (r.ok()) {
      t.set_state(dcufleet::v1::MODEL_TRANSFER_DONE);
      t.set_bytes_done(r->bytes_total);
      t.set_bytes_total(r->bytes_total);
      t.set_bytes_resumed(r->bytes_resumed);
      t.set_eta_ms(0);
      const double secs = absl::ToDoubleSeconds(r->took);
      t.set_bytes_per_second(secs > 0 ? r->bytes_copied / secs : 0);
      t.set_message(absl::StrCat("copied ", common::HumanBytes(r->bytes_copied), " in ", r->files, " files (",
                                 r->files_hashed, " checked against sha256",
                                 r->manifest_recorded ? "; sha256sums recorded"
                                 : r->manifest_error.empty() ? ""
                                                             : absl::StrCat("; no sha256sums: ", r->manifest_error),
                                 r->bytes_resumed ? absl::StrCat(", ", common::HumanBytes(r->bytes_resumed), " resumed") : "",
                                 ") to ", r->path));
    } else {
      t.set_state(dcufleet::v1::MODEL_TRANSFER_FAILED);
      t.set_message(std::string(r.status().message()));
    }
    DCU_LOG_INFO("model '", dir, "': ", t.message());
  }
  if (on_finished_) on_finished_();
}

std::vector<dcufleet::v1::ModelTransfer> ModelTransfers::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<dcufleet::v1::ModelTransfer> out;
  for (const auto& [dir, t] : transfers_) {
    if (t.state() == dcufleet::v1::MODEL_TRANSFER_RUNNING) out.push_back(t);
  }
  for (const auto& [dir, t] : transfers_) {
    if (t.state() != dcufleet::v1::MODEL_TRANSFER_RUNNING) out.push_back(t);
  }
  return out;
}

void ModelTransfers::Shutdown() {
  stopping_ = true;
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

}  // namespace dcu::agent
