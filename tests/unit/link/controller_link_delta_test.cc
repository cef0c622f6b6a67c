// Issue 22: the agent's link sends the inventory only when it changed or
// the controller asks, and only to a controller that says it accepts that.
// The real ControllerLink over real gRPC on loopback, against a NodeService
// written here so the test controls what the controller says.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "agent/link/controller_link.h"
#include "common/inventory_delta.h"
#include "dcufleet/v1/node.grpc.pb.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

using dcufleet::v1::AgentMessage;
using dcufleet::v1::ControllerMessage;

// Welcomes (saying whether it accepts digests, as an older controller
// would not), records every report, and sends an InventoryRequest after the
// `ask_after`-th report when asked to.
class RecordingNodeService final : public dcufleet::v1::NodeService::Service {
 public:
  RecordingNodeService(bool accepts, int ask_after, bool accepts_compact)
      : accepts_(accepts), ask_after_(ask_after), accepts_compact_(accepts_compact) {}

  grpc::Status Connect(grpc::ServerContext*,
                       grpc::ServerReaderWriter<ControllerMessage, AgentMessage>* stream) override {
    AgentMessage in;
    if (!stream->Read(&in) || !in.has_hello()) return grpc::Status::OK;
    {
      absl::MutexLock lock(&mu_);
      hello_ = in.hello();
    }
    ControllerMessage welcome;
    welcome.mutable_welcome()->set_status_interval_ms(50);
    welcome.mutable_welcome()->set_accepts_inventory_digest(accepts_);
    welcome.mutable_welcome()->set_accepts_compact_figures(accepts_ && accepts_compact_);
    stream->Write(welcome);
    int n = 0;
    while (stream->Read(&in)) {
      if (!in.has_status()) continue;
      {
        absl::MutexLock lock(&mu_);
        reports_.push_back(in.status());
      }
      if (++n == ask_after_) {
        ControllerMessage ask;
        ask.mutable_inventory_request()->set_reason("test: digest not held");
        stream->Write(ask);
        asked_at_ = n;
      }
    }
    return grpc::Status::OK;
  }
  std::vector<dcufleet::v1::NodeStatus> Reports() {
    absl::MutexLock lock(&mu_);
    return reports_;
  }
  dcufleet::v1::Hello Hello() {
    absl::MutexLock lock(&mu_);
    return hello_;
  }
  std::atomic<int> asked_at_{0};

 private:
  const bool accepts_;
  const int ask_after_;
  const bool accepts_compact_;
  absl::Mutex mu_;
  dcufleet::v1::Hello hello_ ABSL_GUARDED_BY(mu_);
  std::vector<dcufleet::v1::NodeStatus> reports_ ABSL_GUARDED_BY(mu_);
};

class LinkDeltaTest : public ::testing::Test {
 protected:
  // `controller_compact`: the controller also takes DeviceFigures (false:
  // a controller of the first issue-22 version).
  void Start(bool controller_accepts, bool agent_deltas, int ask_after = -1, bool controller_compact = true) {
    service_ = std::make_unique<RecordingNodeService>(controller_accepts, ask_after, controller_compact);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(port_, 0);
    ControllerLink::Options o;
    o.controller_address = "127.0.0.1:" + std::to_string(port_);
    o.inventory_delta = agent_deltas;
    LinkCallbacks cb;
    cb.make_hello = [this] {
      dcufleet::v1::Hello h;
      h.set_node_name("node-a");
      *h.mutable_inventory() = Current();
      return h;
    };
    cb.make_status = [this] {
      dcufleet::v1::NodeStatus s;
      *s.mutable_inventory() = Current();
      return s;
    };
    link_ = std::make_unique<ControllerLink>(o, cb);
    link_->Start();
  }
  void TearDown() override {
    if (link_) link_->Stop();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }
  // What the agent reads now: `devices_` devices; free memory moves on
  // every read, and its source is `source_`.
  dcufleet::v1::NodeInventory Current() {
    dcufleet::v1::NodeInventory inv;
    inv.set_hostname("host-a");
    const int64_t read = reads_.fetch_add(1);
    for (int i = 0; i < devices_.load(); ++i) {
      auto* d = inv.add_devices();
      d->set_index(i);
      d->set_arch("gfx928");
      d->mutable_device_free()->set_bytes((40LL << 30) + read);
      d->mutable_device_free()->set_valid(true);
      d->mutable_device_free()->set_read_at_ms(1000 + read);
      d->mutable_device_free()->set_source(source_.load() ? "hip:hipMemGetInfo" : "sysfs:mem_info_vram_used");
    }
    inv.set_collected_at_ms(1000 + read);
    return inv;
  }
  bool WaitReports(size_t n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      if (service_->Reports().size() >= n) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  std::atomic<bool> source_{true};
  std::atomic<int> devices_{4};
  std::atomic<int64_t> reads_{0};
  int port_ = 0;
  std::unique_ptr<RecordingNodeService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ControllerLink> link_;
};

TEST_F(LinkDeltaTest, UnchangedInventoryGoesAsDigestAndMovingFigures) {
  Start(/*controller_accepts=*/true, /*agent_deltas=*/true);
  ASSERT_TRUE(WaitReports(4));
  const uint64_t digest = service_->Hello().inventory_digest();
  ASSERT_NE(digest, 0u);
  for (const auto& r : service_->Reports()) {
    EXPECT_FALSE(r.has_inventory());
    EXPECT_EQ(r.inventory_digest(), digest);
    ASSERT_EQ(r.figures().index_size(), 4);
    EXPECT_EQ(r.device_memory_size(), 0);
    EXPECT_GT(r.collected_at_ms(), 1000);
  }
  // A device goes away: the next report carries the whole inventory, with
  // its new digest, and deltas resume against it.
  const size_t before = service_->Reports().size();
  devices_ = 3;
  ASSERT_TRUE(WaitReports(before + 4));
  auto reports = service_->Reports();
  size_t full_at = 0;
  for (size_t i = before; i < reports.size(); ++i) {
    if (reports[i].has_inventory()) {
      full_at = i;
      break;
    }
  }
  ASSERT_NE(full_at, 0u) << "no full inventory after the change";
  EXPECT_EQ(reports[full_at].inventory().devices_size(), 3);
  EXPECT_NE(reports[full_at].inventory_digest(), digest);
  ASSERT_LT(full_at + 1, reports.size());
  EXPECT_FALSE(reports[full_at + 1].has_inventory());
  EXPECT_EQ(reports[full_at + 1].inventory_digest(), reports[full_at].inventory_digest());
  EXPECT_EQ(reports[full_at + 1].figures().index_size(), 3);
}

// The compact figures leave out the sources the controller already has.
// Replayed as the controller applies them, starting from the Hello's
// inventory, every report reproduces what the agent read, also after a
// source changes mid-stream.
TEST_F(LinkDeltaTest, CompactFiguresReplayedGiveWhatTheAgentRead) {
  Start(/*controller_accepts=*/true, /*agent_deltas=*/true);
  ASSERT_TRUE(WaitReports(3));
  source_ = false;
  const size_t switched = service_->Reports().size();
  ASSERT_TRUE(WaitReports(switched + 3));
  dcufleet::v1::NodeInventory held = service_->Hello().inventory();
  int sources_sent = 0;
  const auto reports = service_->Reports();
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    ASSERT_FALSE(r.has_inventory()) << i;
    ASSERT_TRUE(common::ApplyMovingFigures(r, &held).ok()) << i;
    sources_sent += r.figures().sources_size();
    ASSERT_EQ(held.devices_size(), 4);
    for (const auto& d : held.devices()) {
      // The read that made this report: collected_at_ms - 1000.
      EXPECT_EQ(d.device_free().bytes(), (40LL << 30) + (r.collected_at_ms() - 1000)) << i;
      EXPECT_EQ(d.device_free().read_at_ms(), r.collected_at_ms()) << i;
      EXPECT_TRUE(d.device_free().valid());
    }
  }
  // The sources after the switch are the new ones; they went once per
  // device (the read that crossed the switch may have been either).
  for (const auto& d : held.devices()) EXPECT_EQ(d.device_free().source(), "sysfs:mem_info_vram_used");
  EXPECT_EQ(sources_sent, 4);
}

// A controller of the first issue-22 version takes digests but not the
// compact figures: the agent sends DeviceMemory readings to it.
TEST_F(LinkDeltaTest, AControllerWithoutCompactFiguresGetsDeviceMemory) {
  Start(/*controller_accepts=*/true, /*agent_deltas=*/true, /*ask_after=*/-1, /*controller_compact=*/false);
  ASSERT_TRUE(WaitReports(4));
  for (const auto& r : service_->Reports()) {
    EXPECT_FALSE(r.has_inventory());
    EXPECT_EQ(r.device_memory_size(), 4);
    EXPECT_FALSE(r.has_figures());
    EXPECT_EQ(r.device_memory(0).device_free().source(), "hip:hipMemGetInfo");
  }
}

TEST_F(LinkDeltaTest, AnInventoryRequestIsAnsweredWithTheFullInventory) {
  Start(/*controller_accepts=*/true, /*agent_deltas=*/true, /*ask_after=*/3);
  ASSERT_TRUE(WaitReports(8));
  auto reports = service_->Reports();
  const int asked = service_->asked_at_.load();
  ASSERT_EQ(asked, 3);
  // Reports up to the request are deltas; one of the next two (the request
  // may cross a report in flight) carries the inventory, unchanged as it is.
  for (int i = 0; i < asked; ++i) EXPECT_FALSE(reports[i].has_inventory()) << i;
  const bool answered = reports[asked].has_inventory() || reports[asked + 1].has_inventory();
  EXPECT_TRUE(answered);
  int full = 0;
  for (const auto& r : reports) full += r.has_inventory();
  EXPECT_EQ(full, 1);
}

// A controller from before issue 22 never says it accepts digests (nor
// asks): the agent sends the inventory in every report.
TEST_F(LinkDeltaTest, AnOlderControllerGetsTheFullInventoryEveryTime) {
  Start(/*controller_accepts=*/false, /*agent_deltas=*/true);
  ASSERT_TRUE(WaitReports(4));
  for (const auto& r : service_->Reports()) {
    EXPECT_TRUE(r.has_inventory());
    EXPECT_EQ(r.inventory().devices_size(), 4);
    EXPECT_EQ(r.device_memory_size(), 0);
    EXPECT_FALSE(r.has_figures());
  }
}

// --inventory-delta=false: the agent behaves as one from before issue 22.
TEST_F(LinkDeltaTest, WithDeltasOffTheAgentSendsNoDigestAndFullInventories) {
  Start(/*controller_accepts=*/true, /*agent_deltas=*/false);
  ASSERT_TRUE(WaitReports(4));
  EXPECT_EQ(service_->Hello().inventory_digest(), 0u);
  for (const auto& r : service_->Reports()) {
    EXPECT_TRUE(r.has_inventory());
    EXPECT_EQ(r.inventory_digest(), 0u);
  }
}

}  // namespace
}  // namespace dcu::agent
