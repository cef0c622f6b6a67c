#include "agent/supervisor/engine_load_scraper.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dcu::agent {
namespace {

// Instances' /metrics by port, as a vLLM answers them; a port with no page
// refuses the connection, as a dead engine's does.
class PagesHttpClient : public common::HttpClient {
 public:
  absl::StatusOr<common::HttpResponse> Send(const common::HttpRequest& r) override {
    ++requests[r.port];
    auto it = pages.find(r.port);
    if (it == pages.end()) return absl::UnavailableError("connection refused");
    common::HttpResponse resp;
    resp.status = 200;
    resp.body = it->second;
    return resp;
  }
  std::map<int, std::string> pages;
  std::map<int, int> requests;
};

std::string Page(int running, int waiting, double kv) {
  return absl::StrCat("# TYPE vllm:num_requests_running gauge\n",
                      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} ", running, "\n",
                      "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} ", waiting, "\n",
                      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} ", kv, "\n");
}

dcufleet::v1::InstanceStatus Instance(const std::string& id, dcufleet::v1::InstancePhase phase,
                                      int port) {
  dcufleet::v1::InstanceStatus st;
  st.set_instance_id(id);
  st.set_phase(phase);
  st.set_port(port);
  return st;
}

class EngineLoadScraperTest : public ::testing::Test {
 protected:
  EngineLoadScraperTest()
      : scraper_([this] { return instances_; }, &http_, &clock_, absl::Seconds(1)) {}
  std::vector<dcufleet::v1::InstanceStatus> Filled() {
    auto copy = instances_;
    scraper_.Fill(&copy);
    return copy;
  }
  std::vector<dcufleet::v1::InstanceStatus> instances_;
  PagesHttpClient http_;
  common::FakeClock clock_;
  EngineLoadScraper scraper_;
};

TEST_F(EngineLoadScraperTest, ReadyInstancesCarryTheirEnginesLoad) {
  instances_ = {Instance("a", dcufleet::v1::INSTANCE_READY, 8001),
                Instance("b", dcufleet::v1::INSTANCE_STARTING, 8002)};
  http_.pages[8001] = Page(3, 7, 0.5);
  http_.pages[8002] = Page(1, 1, 0.1);
  scraper_.ScrapeOnce();
  auto got = Filled();
  ASSERT_TRUE(got[0].has_load());
  EXPECT_EQ(got[0].load().running(), 3);
  EXPECT_EQ(got[0].load().waiting(), 7);
  EXPECT_DOUBLE_EQ(got[0].load().kv_cache_usage(), 0.5);
  EXPECT_EQ(got[0].load().scraped_at_ms(), absl::ToUnixMillis(clock_.Now()));
  // A starting engine is not asked (its server may not listen yet).
  EXPECT_FALSE(got[1].has_load());
  EXPECT_EQ(http_.requests.count(8002), 0u);
}

TEST_F(EngineLoadScraperTest, AnEngineThatStopsAnsweringLosesItsLoadOnceItIsOld) {
  instances_ = {Instance("a", dcufleet::v1::INSTANCE_READY, 8001)};
  http_.pages[8001] = Page(2, 0, 0.2);
  scraper_.ScrapeOnce();
  http_.pages.clear();
  clock_.Advance(absl::Seconds(2));
  scraper_.ScrapeOnce();
  EXPECT_TRUE(Filled()[0].has_load()) << "one missed round keeps the last figure";
  clock_.Advance(absl::Seconds(2));
  scraper_.ScrapeOnce();
  EXPECT_FALSE(Filled()[0].has_load()) << "older than three intervals: dropped";
}

TEST_F(EngineLoadScraperTest, NotAVllmOrAGoneInstanceHasNoLoad) {
  instances_ = {Instance("a", dcufleet::v1::INSTANCE_READY, 8001),
                Instance("b", dcufleet::v1::INSTANCE_READY, 8002)};
  http_.pages[8001] = "process_cpu_seconds_total 1\n";
  http_.pages[8002] = Page(1, 0, 0);
  scraper_.ScrapeOnce();
  auto got = Filled();
  EXPECT_FALSE(got[0].has_load());
  EXPECT_TRUE(got[1].has_load());
  // b is replaced by another instance on the same port: b's load is not its.
  instances_ = {Instance("c", dcufleet::v1::INSTANCE_READY, 8003)};
  scraper_.ScrapeOnce();
  EXPECT_FALSE(Filled()[0].has_load());
  instances_ = {Instance("b", dcufleet::v1::INSTANCE_STARTING, 8002)};
  EXPECT_FALSE(Filled()[0].has_load()) << "b was forgotten when it was no longer listed";
}

}  // namespace
}  // namespace dcu::agent
