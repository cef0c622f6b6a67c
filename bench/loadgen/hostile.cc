#include "bench/loadgen/hostile.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dcu::bench {

using dcufleet::v1::AgentMessage;
using dcufleet::v1::ControllerMessage;

namespace {

AgentMessage Hello(const std::string& node, int devices) {
  AgentMessage m;
  auto* h = m.mutable_hello();
  h->set_node_name(node);
  h->set_agent_version("0.1.0-hostile");
  for (int i = 0; i < devices; ++i) {
    auto* d = h->mutable_inventory()->add_devices();
    d->set_index(i);
    d->set_arch("gfx928");
    d->set_product_name("K100_AI");
  }
  return m;
}

}  // namespace

HostileAgent::HostileAgent(std::string node, dcufleet::v1::NodeService::Stub* stub)
    : node_(std::move(node)), stub_(stub) {}

HostileAgent::~HostileAgent() { Stop(); }

void HostileAgent::Start() {
  flood_ = std::thread([this] { FloodEvents(); });
  huge_ = std::thread([this] { HugeInventories(); });
}

void HostileAgent::Stop() {
  stop_.store(true);
  if (flood_.joinable()) flood_.join();
  if (huge_.joinable()) huge_.join();
}

void HostileAgent::FloodEvents() {
  const AgentMessage hello = Hello(node_, 8);
  int64_t n = 0;
  while (!stop_.load()) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto stream = stub_->Connect(&ctx);
    counts_.streams.fetch_add(1);
    bool welcomed = false;
    if (stream->Write(hello)) {
      ControllerMessage first;
      welcomed = stream->Read(&first) && first.has_welcome();
    }
    // The controller's later messages (assignments) are not read: the
    // flooder only writes, as a broken or malicious agent would.
    while (welcomed && !stop_.load()) {
      AgentMessage ev;
      auto* st = ev.mutable_instance_event()->mutable_status();
      st->set_instance_id(absl::StrCat("forged-", n++));
      st->set_phase(dcufleet::v1::INSTANCE_READY);
      if (!stream->Write(ev)) break;
      counts_.events_sent.fetch_add(1);
    }
    ctx.TryCancel();
    grpc::Status s = stream->Finish();
    if (!stop_.load() && !s.ok()) {
      counts_.streams_refused.fetch_add(1);
      if (!welcomed) counts_.hello_refused.fetch_add(1);
    }
  }
}

void HostileAgent::HugeInventories() {
  const AgentMessage huge = Hello(node_ + "-huge", 65536);
  while (!stop_.load()) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = stub_->Connect(&ctx);
    counts_.huge_hellos.fetch_add(1);
    bool welcomed = false;
    if (stream->Write(huge)) {
      ControllerMessage first;
      welcomed = stream->Read(&first) && first.has_welcome();
    }
    ctx.TryCancel();
    grpc::Status s = stream->Finish();
    (welcomed ? counts_.huge_welcomed : counts_.huge_refused).fetch_add(1);
    // One attempt a few times a second: what matters is that none is taken.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace dcu::bench
