// What a node with a valid certificate may send on its stream (issue 22's
// reports with and without the inventory, in both delta forms; instance
// events; command results; goodbyes), in any order, applied to the
// controller's FleetState by the stream's rules (controller/core/agent_stream.h),
// the ones controller/service/node_service.cc runs over gRPC: a Hello before
// anything else, a refused message ends the stream.
//
// The same stream goes to two FleetStates. On one, nothing else holds a
// node's view, so a report whose digest matches is applied in place
// (ApplyDeltaInPlaceLocked); on the other a reader holds every view while
// each message is applied, so the same report is deferred as times only or
// copied into a new view. What a reader then sees of every node must be the
// same on both: three ways to apply one report, one answer. A difference
// aborts with the fields that differ.
//
// Input: frames separated by a line "@@". A frame
// is a command -- "tick N" (the clock moves N seconds, then Tick),
// "disconnect" (the stream ends), "goodbye-job ID" (a Slurm allocation
// ended) -- or an AgentMessage in protobuf text format. The seeds
// (corpus/agent_stream) are a Hello carrying bench/common/synthetic_fleet's
// inventory of node 0 with two devices, full reports, digest-only and
// compact deltas made from it by common/inventory_delta's MakeDelta and
// CompactFiguresWriter (one with a device's free memory moved), an instance
// event, a reconnect and a Goodbye, printed with TextFormat.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/clock.h"
#include "common/logging.h"
#include "controller/core/agent_stream.h"
#include "controller/core/fleet_state.h"
#include "controller/store/sqlite_store.h"
#include "dcufleet/v1/node.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace {

using dcu::controller::FleetState;

// Text the mutator broke is refused quietly (protobuf logs every parse
// error otherwise, at a few hundred inputs a second).
class NoErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

class QuietSession : public dcu::controller::NodeSession {
 public:
  bool Send(dcufleet::v1::ControllerMessage) override { return true; }
  std::string Peer() const override { return "fuzz"; }
};

// One controller's view of the stream.
struct Side {
  explicit Side(const dcu::common::FakeClock* clock) {
    store = std::move(*dcu::controller::SqliteStore::Open(":memory:"));
    fleet = std::make_unique<FleetState>(store.get(), store.get(), clock, FleetState::Options());
  }
  std::unique_ptr<dcu::controller::SqliteStore> store;
  std::unique_ptr<FleetState> fleet;
};

// One stream after another of the same node, each on its own session (as a
// reconnecting agent's streams are), each run by the stream's rules.
class Stream {
 public:
  explicit Stream(FleetState* fleet) : fleet_(fleet) { Open(); }
  dcu::controller::AgentStreamRules& rules() { return *rules_; }
  // The stream ends (the agent went, or the controller refused a message);
  // the next message opens another.
  void End() {
    rules_->Disconnected();
    current_ ^= 1;
    Open();
  }

 private:
  void Open() {
    // A node with a valid certificate for whatever name it claims.
    rules_ = std::make_unique<dcu::controller::AgentStreamRules>(
        fleet_, &sessions_[current_],
        [](absl::string_view, absl::string_view) { return absl::OkStatus(); });
  }
  FleetState* const fleet_;
  QuietSession sessions_[2];
  int current_ = 0;
  std::unique_ptr<dcu::controller::AgentStreamRules> rules_;
};

// Applies one message as node_service.cc does; returns whether the stream
// goes on.
bool Apply(Stream& stream, dcufleet::v1::AgentMessage msg) {
  dcu::controller::AgentStreamRules& rules = stream.rules();
  absl::Status s;
  if (rules.registered()) {
    s = rules.Handle(msg);
  } else {
    absl::StatusOr<dcufleet::v1::Hello> hello = rules.TakeHello(msg);
    s = hello.ok() ? rules.Register(*std::move(hello)) : hello.status();
  }
  if (!s.ok()) rules.Refused(s);
  return s.ok();
}

void CompareOrDie(const Side& a, const Side& b, const std::string& after) {
  std::vector<dcufleet::v1::NodeView> va = a.fleet->ListNodes(), vb = b.fleet->ListNodes();
  if (va.size() != vb.size()) {
    std::fprintf(stderr, "after %s: %zu nodes in place, %zu copied\n", after.c_str(), va.size(), vb.size());
    std::abort();
  }
  for (size_t i = 0; i < va.size(); ++i) {
    google::protobuf::util::MessageDifferencer diff;
    // Each controller draws its own node ids.
    diff.IgnoreField(dcufleet::v1::NodeView::descriptor()->FindFieldByName("node_id"));
    std::string report;
    diff.ReportDifferencesToString(&report);
    if (!diff.Compare(va[i], vb[i])) {
      std::fprintf(stderr, "after %s: node '%s' differs (in place, then copied):\n%s", after.c_str(),
                   va[i].name().c_str(), report.c_str());
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = [] {
    dcu::common::SetLogLevel(dcu::common::LogLevel::kError);
    // Strings that are not UTF-8 are refused by the round trip below (as
    // gRPC refuses them); protobuf would log each one.
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  if (size > 64 * 1024) return 0;  // a few hundred messages at most
  const std::string text(reinterpret_cast<const char*>(data), size);
  dcu::common::FakeClock clock;
  Side in_place(&clock), copied(&clock);
  Stream sa(in_place.fleet.get()), sb(copied.fleet.get());
  int frame_no = 0;
  for (absl::string_view frame : absl::StrSplit(text, "\n@@\n")) {
    ++frame_no;
    frame = absl::StripAsciiWhitespace(frame);
    const std::string after = "frame " + std::to_string(frame_no);
    int64_t seconds = 0;
    if (absl::ConsumePrefix(&frame, "tick ") && absl::SimpleAtoi(frame, &seconds)) {
      clock.Advance(absl::Seconds(std::clamp<int64_t>(seconds, 0, 7 * 24 * 3600)));
      in_place.fleet->Tick();
      copied.fleet->Tick();
    } else if (frame == "disconnect") {
      sa.End();
      sb.End();
    } else if (absl::ConsumePrefix(&frame, "goodbye-job ")) {
      in_place.fleet->OnAllocationEnded(std::string(frame), "fuzz");
      copied.fleet->OnAllocationEnded(std::string(frame), "fuzz");
    } else {
      dcufleet::v1::AgentMessage msg;
      google::protobuf::TextFormat::Parser parser;
      parser.AllowPartialMessage(true);
      NoErrors no_errors;
      parser.RecordErrorsTo(&no_errors);
      // What gRPC would refuse before the controller sees it.
      if (!parser.ParseFromString(std::string(frame), &msg) || !msg.IsInitialized()) continue;
      std::string wire;
      if (!msg.SerializeToString(&wire) || !msg.ParseFromString(wire)) continue;
      const bool go_a = Apply(sa, msg);
      bool go_b;
      {
        // A reader holds every view: no report can change one in place.
        auto held = copied.fleet->Snapshot();
        go_b = Apply(sb, msg);
      }
      if (go_a != go_b) {
        std::fprintf(stderr, "after %s: the in-place side %s the message, the copying side %s it\n",
                     after.c_str(), go_a ? "took" : "refused", go_b ? "took" : "refused");
        std::abort();
      }
      // A refused message ends the stream (node_service.cc FinishOnce).
      if (!go_a) {
        sa.End();
        sb.End();
      }
    }
    CompareOrDie(in_place, copied, after);
  }
  return 0;
}
