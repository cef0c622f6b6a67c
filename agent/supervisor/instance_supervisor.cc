#include "agent/supervisor/instance_supervisor.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/supervisor/log_tail.h"
#include "common/logging.h"
#include "modelkit/startup_progress.h"
#include "modelkit/startup_stall.h"
#include "google/protobuf/util/message_differencer.h"
#include "nlohmann/json.hpp"

namespace dcu::agent {
namespace {

using dcufleet::v1::InstanceStatus;
using json = nlohmann::json;

std::string ExitDescription(const RuntimeInstance& ri) {
  if (!ri.exit_known) return "exited (exit status unknown: it ended while unobserved)";
  if (ri.term_signal != 0 && ri.exit_code < 0) {
    return absl::StrCat("killed by signal ", ri.term_signal);
  }
  return absl::StrCat("exited with code ", ri.exit_code);
}

}  // namespace

InstanceSupervisor::InstanceSupervisor(dcufleet::v1::InstanceSpec spec, Runtime* runtime,
                                       common::HttpClient* http, common::Clock* clock,
                                       SupervisorOptions options, InstanceStatusListener listener,
                                       std::string no_runtime_reason)
    : spec_(std::move(spec)),
      runtime_(runtime),
      http_(http),
      clock_(clock),
      options_(std::move(options)),
      listener_(std::move(listener)),
      no_runtime_reason_(std::move(no_runtime_reason)) {
  served_name_ = !spec_.served_model_name().empty() ? spec_.served_model_name() : spec_.model();
  absl::MutexLock lock(&mu_);
  status_.set_instance_id(spec_.instance_id());
  status_.set_phase(dcufleet::v1::INSTANCE_PENDING);
  status_.set_port(spec_.port());
  status_.set_runtime_kind(spec_.runtime_kind());
  status_.set_updated_at_ms(common::ToUnixMillis(clock_->Now()));
}

InstanceSupervisor::~InstanceSupervisor() {
  Detach();
  Join();
}

void InstanceSupervisor::Begin(std::optional<RuntimeInstance> adopted) {
  thread_ = std::thread([this, adopted = std::move(adopted)]() mutable {
    Run(std::move(adopted));
    absl::MutexLock lock(&mu_);
    done_ = true;
  });
}

void InstanceSupervisor::RequestStop() {
  absl::MutexLock lock(&mu_);
  signal_ = Signal::kStop;
}

void InstanceSupervisor::Detach() {
  absl::MutexLock lock(&mu_);
  if (signal_ == Signal::kNone) signal_ = Signal::kDetach;
}

void InstanceSupervisor::Join() {
  if (thread_.joinable()) thread_.join();
}

InstanceStatus InstanceSupervisor::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

bool InstanceSupervisor::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

bool InstanceSupervisor::stop_requested() const {
  absl::MutexLock lock(&mu_);
  return signal_ == Signal::kStop;
}

void InstanceSupervisor::set_generation(int64_t generation) {
  Update([generation](InstanceStatus* s) { s->set_generation(generation); });
}

InstanceSupervisor::Signal InstanceSupervisor::WaitFor(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(
                           +[](Signal* s) { return *s != Signal::kNone; }, &signal_),
                       d);
  return signal_;
}

void InstanceSupervisor::Update(const std::function<void(InstanceStatus*)>& mutate) {
  InstanceStatus copy;
  {
    absl::MutexLock lock(&mu_);
    InstanceStatus before = status_;
    mutate(&status_);
    before.set_updated_at_ms(0);
    InstanceStatus after = status_;
    after.set_updated_at_ms(0);
    if (google::protobuf::util::MessageDifferencer::Equals(before, after)) return;
    status_.set_updated_at_ms(common::ToUnixMillis(clock_->Now()));
    copy = status_;
  }
  if (listener_) listener_(copy);
}

std::vector<std::string> InstanceSupervisor::LogTail() {
  if (runtime_ == nullptr) return {};
  auto tail = runtime_->ReadLogTail(spec_.instance_id(), options_.log_tail_bytes);
  // No log because nothing ran (a start refused before the process or the
  // container existed): the failure message is the whole story, and a
  // placeholder line here would be diagnosed instead of it.
  if (absl::IsNotFound(tail.status())) return {};
  if (!tail.ok()) return {absl::StrCat("(log unavailable: ", tail.status().message(), ")")};
  return LastLogLines(*tail, static_cast<size_t>(options_.log_tail_lines),
                      /*starts_at_line=*/tail->size() < options_.log_tail_bytes);
}

void InstanceSupervisor::Fail(const std::string& message, bool stop_instance,
                              const RuntimeInstance* exited) {
  if (stop_instance && runtime_ != nullptr) {
    absl::Duration grace = spec_.stop_grace_s() > 0 ? absl::Seconds(spec_.stop_grace_s())
                                                    : options_.default_stop_grace;
    if (auto s = runtime_->Stop(spec_.instance_id(), grace); !s.ok()) {
      DCU_LOG_WARN("instance '", spec_.instance_id(), "': stop after failure: ", s.message());
    }
  }
  std::vector<std::string> tail = LogTail();
  DCU_LOG_WARN("instance '", spec_.instance_id(), "' failed: ", message);
  Update([&](InstanceStatus* s) {
    s->set_phase(dcufleet::v1::INSTANCE_FAILED);
    s->set_message(message);
    if (exited != nullptr) {
      s->set_exit_code(exited->exit_code);
      s->set_term_signal(exited->term_signal);
    } else {
      s->set_exit_code(-1);
    }
    s->clear_log_tail();
    for (auto& l : tail) s->add_log_tail(l);
  });
}

void InstanceSupervisor::UpdateProgress() {
  AdvanceProgress();
  PublishProgress();
}

void InstanceSupervisor::AdvanceProgress() {
  const dcufleet::v1::StartupProgress before = progress_;
  constexpr size_t kTailBytes = 64 << 10;
  if (log_position_) {
    // What was written since the last read, each line once however alike.
    auto chunk = runtime_->ReadLogSince(spec_.instance_id(), *log_position_, kTailBytes);
    if (chunk.ok()) {
      log_follower_.AdvanceFrom(chunk->text, chunk->partial, &progress_);
      log_position_ = chunk->next_offset;
    } else if (absl::IsUnimplemented(chunk.status())) {
      log_position_.reset();
    }
  }
  if (!log_position_) {
    auto tail = runtime_->ReadLogTail(spec_.instance_id(), kTailBytes);
    if (tail.ok()) {
      // Successive tails overlap: each line is applied once.
      log_follower_.Advance(*tail, /*starts_at_line=*/tail->size() < kTailBytes, &progress_);
    }
  }
  if (!triton_cache_dir_.empty()) {
    FileCounter* counter =
        options_.file_counter != nullptr ? options_.file_counter : &default_file_counter_;
    auto n = counter->CountFiles(triton_cache_dir_, /*limit=*/1000000);
    // Not there yet: Triton creates it when it compiles its first kernel.
    modelkit::ApplyTritonCacheCount(n.ok() ? *n : 0, &progress_);
  }
  const absl::Time now = clock_->Now();
  if (progress_.phase() != before.phase() || progress_.activity() != before.activity()) {
    progress_.set_phase_since_ms(common::ToUnixMillis(now));
  }
  if (modelkit::StartupAdvanced(before, progress_)) {
    last_progress_ = now;
    progress_.set_last_progress_ms(common::ToUnixMillis(now));
  }
}

void InstanceSupervisor::ShowProgress(InstanceStatus* s) const {
  *s->mutable_startup() = progress_;
  // Changes with every line: kept for the stall message, not sent each time.
  s->mutable_startup()->clear_last_line();
  s->mutable_startup()->clear_last_progress_ms();
  s->set_shards_loaded(progress_.shards_loaded());
  s->set_shards_total(progress_.shards_total());
}

void InstanceSupervisor::PublishProgress() {
  const bool weights = progress_.shards_total() > 0 ||
                       (progress_.phase() >= dcufleet::v1::STARTUP_LOADING_WEIGHTS &&
                        progress_.phase() != dcufleet::v1::STARTUP_FAILED);
  Update([&](InstanceStatus* s) {
    ShowProgress(s);
    if (weights && s->phase() == dcufleet::v1::INSTANCE_STARTING) {
      s->set_phase(dcufleet::v1::INSTANCE_LOADING);
    }
  });
}

bool InstanceSupervisor::CheckHealth() {
  common::HttpRequest req;
  req.host = options_.health_host;
  req.port = spec_.port();
  req.timeout = options_.http_timeout;
  req.path = "/health";
  auto health = http_->Send(req);
  if (!health.ok() || health->status != 200) {
    std::string why = health.ok() ? absl::StrCat("status ", health->status)
                                  : std::string(health.status().message());
    Update([&](InstanceStatus* s) { s->set_last_check(absl::StrCat("GET /health: ", why)); });
    return false;
  }
  Update([&](InstanceStatus* s) {
    if (s->phase() == dcufleet::v1::INSTANCE_STARTING || s->phase() == dcufleet::v1::INSTANCE_LOADING) {
      s->set_phase(dcufleet::v1::INSTANCE_HEALTH_CHECKING);
    }
    s->set_last_check("GET /health: 200");
  });

  req.path = "/v1/models";
  auto models = http_->Send(req);
  if (!models.ok() || models->status != 200) {
    std::string why = models.ok() ? absl::StrCat("status ", models->status)
                                  : std::string(models.status().message());
    Update([&](InstanceStatus* s) { s->set_last_check(absl::StrCat("GET /v1/models: ", why)); });
    return false;
  }
  std::vector<std::string> ids;
  try {
    json j = json::parse(models->body);
    for (const auto& m : j.at("data")) ids.push_back(m.at("id").get<std::string>());
  } catch (const std::exception& e) {
    Update([&](InstanceStatus* s) {
      s->set_last_check(absl::StrCat("GET /v1/models: unreadable answer: ", e.what()));
    });
    return false;
  }
  std::string name = served_name_;
  if (name.empty() && !ids.empty()) name = ids.front();
  if (std::find(ids.begin(), ids.end(), name) == ids.end()) {
    Update([&](InstanceStatus* s) {
      s->set_last_check(absl::StrCat("GET /v1/models: '", name, "' not listed (listed: ",
                                     absl::StrJoin(ids, ", "), ")"));
    });
    return false;
  }

  req.method = "POST";
  req.path = "/v1/completions";
  req.timeout = options_.completion_timeout;
  req.body = json({{"model", name}, {"prompt", "Hello"}, {"max_tokens", 1}, {"temperature", 0}})
                 .dump();
  auto completion = http_->Send(req);
  bool ok = completion.ok() && completion->status == 200;
  std::string why;
  if (!completion.ok()) {
    why = std::string(completion.status().message());
  } else if (completion->status != 200) {
    why = absl::StrCat("status ", completion->status, ": ", completion->body.substr(0, 300));
  } else {
    try {
      json j = json::parse(completion->body);
      ok = j.at("choices").is_array() && !j["choices"].empty();
      if (!ok) why = "no choices in the answer";
    } catch (const std::exception& e) {
      ok = false;
      why = absl::StrCat("unreadable answer: ", e.what());
    }
  }
  if (!ok) {
    Update([&](InstanceStatus* s) {
      s->set_last_check(absl::StrCat("POST /v1/completions: ", why));
    });
    return false;
  }
  // The engine answered, so everything it logged before answering is in the
  // log now; the last read may have come a moment before its final lines
  // (the last shard, the "ready" line). Read once more so the READY status
  // never shows 3/4 shards for an engine that loaded all 4.
  AdvanceProgress();
  int64_t now = common::ToUnixMillis(clock_->Now());
  // The health chain confirms what the log said (or says it when the log
  // did not: an engine without uvicorn's lines).
  if (progress_.phase() != dcufleet::v1::STARTUP_READY) {
    progress_.set_phase(dcufleet::v1::STARTUP_READY);
    progress_.set_activity(dcufleet::v1::STARTUP_ACTIVITY_UNSPECIFIED);
    progress_.set_phase_since_ms(now);
    progress_.set_phase_line("POST /v1/completions: 200");
  }
  Update([&](InstanceStatus* s) {
    ShowProgress(s);
    s->set_phase(dcufleet::v1::INSTANCE_READY);
    s->set_last_check("POST /v1/completions: 200");
    s->set_ready_at_ms(now);
    s->set_message(absl::StrCat("serving '", name, "' on port ", spec_.port()));
  });
  DCU_LOG_INFO("instance '", spec_.instance_id(), "' is ready on port ", spec_.port());
  return true;
}

void InstanceSupervisor::DoStop() {
  Update([](InstanceStatus* s) { s->set_phase(dcufleet::v1::INSTANCE_STOPPING); });
  std::string message = "stopped";
  if (runtime_ != nullptr) {
    absl::Duration grace = spec_.stop_grace_s() > 0 ? absl::Seconds(spec_.stop_grace_s())
                                                    : options_.default_stop_grace;
    absl::Status s = runtime_->Stop(spec_.instance_id(), grace);
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound) {
      message = absl::StrCat("stop: ", s.message());
    } else if (absl::Status r = runtime_->Remove(spec_.instance_id()); !r.ok()) {
      message = absl::StrCat("stopped; remove: ", r.message());
    }
  }
  Update([&](InstanceStatus* s) {
    s->set_phase(dcufleet::v1::INSTANCE_STOPPED);
    s->set_message(message);
  });
}

void InstanceSupervisor::ParkUntilSignal() {
  for (;;) {
    Signal sig = WaitFor(absl::Seconds(3600));
    if (sig == Signal::kStop) {
      DoStop();
      return;
    }
    if (sig == Signal::kDetach) return;
  }
}

void InstanceSupervisor::Run(std::optional<RuntimeInstance> adopted) {
  if (runtime_ == nullptr) {
    Fail(no_runtime_reason_.empty() ? "no runtime for this instance" : no_runtime_reason_,
         /*stop_instance=*/false, nullptr);
    ParkUntilSignal();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (signal_ == Signal::kDetach) return;
  }
  RuntimeInstance ri;
  if (adopted.has_value()) {
    ri = *adopted;
    Update([&](InstanceStatus* s) { s->set_adopted(true); });
  } else {
    bool stop_now;
    {
      absl::MutexLock lock(&mu_);
      stop_now = signal_ == Signal::kStop;
    }
    if (stop_now) {
      // Removed before it ever started.
      Update([](InstanceStatus* s) {
        s->set_phase(dcufleet::v1::INSTANCE_STOPPED);
        s->set_message("removed before start");
      });
      return;
    }
  }
  if (!adopted.has_value()) {
    auto started = runtime_->Start(spec_);
    if (!started.ok() && started.status().code() == absl::StatusCode::kAlreadyExists) {
      // Running already (an earlier agent started it): adopt, never duplicate.
      started = runtime_->Inspect(spec_.instance_id());
      if (started.ok()) Update([](InstanceStatus* s) { s->set_adopted(true); });
    }
    if (!started.ok()) {
      Fail(absl::StrCat("start failed: ", started.status().message()), /*stop_instance=*/false,
           nullptr);
      ParkUntilSignal();
      return;
    }
    ri = *started;
  }
  absl::Time started_at = ri.started_at == absl::InfinitePast() ? clock_->Now() : ri.started_at;
  Update([&](InstanceStatus* s) {
    s->set_phase(dcufleet::v1::INSTANCE_STARTING);
    s->set_pid(ri.pid);
    s->set_container_id(ri.container_id);
    s->set_started_at_ms(common::ToUnixMillis(started_at));
    s->set_log_location(ri.log_location);
    s->set_runtime_kind(spec_.runtime_kind());
    s->clear_notes();
    for (const auto& n : ri.notes) s->add_notes(n);
  });
  if (!ri.running) {
    if (ri.stop_requested) {
      // It was being stopped when the previous agent went away: finish that.
      DoStop();
      return;
    }
    Fail(absl::StrCat("process ", ExitDescription(ri)), /*stop_instance=*/true, &ri);
    ParkUntilSignal();
    return;
  }

  // The ceiling is a last resort; stalls are caught by the windows below.
  absl::Duration ceiling = spec_.startup_timeout_s() > 0 ? absl::Seconds(spec_.startup_timeout_s())
                                                         : options_.default_startup_timeout;
  if (spec_.runtime_kind() == dcufleet::v1::RUNTIME_BARE) {
    // A container's TRITON_CACHE_DIR is a path inside it, not on this host.
    auto it = spec_.env().find("TRITON_CACHE_DIR");
    if (it != spec_.env().end() && !it->second.empty()) triton_cache_dir_ = it->second;
  }
  // Progress counts from when this agent began watching (an adopted
  // instance's earlier progress is not known).
  last_progress_ = clock_->Now();
  progress_.set_phase_since_ms(common::ToUnixMillis(last_progress_));
  bool ready = false;
  absl::Time next_ready_check = absl::InfinitePast();
  for (;;) {
    Signal sig = WaitFor(ready ? std::min(options_.poll_interval * 4, options_.ready_check_interval)
                               : options_.poll_interval);
    if (sig == Signal::kStop) {
      DoStop();
      return;
    }
    if (sig == Signal::kDetach) return;

    auto now_ri = runtime_->Inspect(spec_.instance_id());
    if (!now_ri.ok()) {
      if (now_ri.status().code() == absl::StatusCode::kNotFound) {
        Fail("instance vanished from its runtime", /*stop_instance=*/false, nullptr);
        ParkUntilSignal();
        return;
      }
      Update([&](InstanceStatus* s) {
        s->set_last_check(absl::StrCat("inspect: ", now_ri.status().message()));
      });
      continue;
    }
    if (!now_ri->running) {
      if (!ready) UpdateProgress();
      Fail(absl::StrCat("process ", ExitDescription(*now_ri),
                        ready ? " while serving" : " during start-up"),
           /*stop_instance=*/true, &*now_ri);
      ParkUntilSignal();
      return;
    }
    if (!ready) {
      UpdateProgress();
      if (CheckHealth()) {
        ready = true;
        next_ready_check = clock_->Now() + options_.ready_check_interval;
        continue;
      }
      const absl::Time now = clock_->Now();
      modelkit::StallVerdict verdict = modelkit::CheckStartupStall(
          progress_, now - last_progress_, now - started_at, ceiling, spec_.startup_stall());
      if (verdict.kind != modelkit::StallVerdict::Kind::kProgressing) {
        std::string last = status().last_check();
        // The status keeps the line it was stuck after, for the diagnosis.
        Update([&](InstanceStatus* s) {
          auto* st = s->mutable_startup();
          st->set_last_line(progress_.last_line());
          st->set_last_progress_ms(progress_.last_progress_ms());
          st->set_stopped_by(verdict.kind == modelkit::StallVerdict::Kind::kCeiling
                                 ? dcufleet::v1::STARTUP_STOP_CEILING
                                 : dcufleet::v1::STARTUP_STOP_STALLED);
          st->set_stuck_for_ms(absl::ToInt64Milliseconds(now - last_progress_));
          st->set_stall_window_ms(absl::ToInt64Milliseconds(verdict.window));
        });
        Fail(absl::StrCat(verdict.message,
                          last.empty() ? "" : absl::StrCat(" (last check: ", last, ")")),
             /*stop_instance=*/true, nullptr);
        ParkUntilSignal();
        return;
      }
      continue;
    }
    if (clock_->Now() < next_ready_check) continue;
    next_ready_check = clock_->Now() + options_.ready_check_interval;
    common::HttpRequest req;
    req.host = options_.health_host;
    req.port = spec_.port();
    req.timeout = options_.http_timeout;
    req.path = "/health";
    auto health = http_->Send(req);
    if (health.ok() && health->status == 200) {
      unhealthy_streak_ = 0;
      continue;
    }
    ++unhealthy_streak_;
    std::string why = health.ok() ? absl::StrCat("status ", health->status)
                                  : std::string(health.status().message());
    Update([&](InstanceStatus* s) { s->set_last_check(absl::StrCat("GET /health: ", why)); });
    if (unhealthy_streak_ >= options_.unhealthy_threshold) {
      Fail(absl::StrCat("unhealthy: ", unhealthy_streak_, " failed health checks in a row (",
                        why, ")"),
           /*stop_instance=*/true, nullptr);
      ParkUntilSignal();
      return;
    }
  }
}

}  // namespace dcu::agent
