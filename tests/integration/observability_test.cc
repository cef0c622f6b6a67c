// Issue 18, tested for real: seed 000's node-k100 (59 GiB left on device 0
// by a dead instance) behind a real dcu-controller and dcu-agent, a deploy
// that fails over, a real dcu-gateway serving it; then
//   - `promtool check metrics` on all three /metrics endpoints,
//   - a real Prometheus server scraping them, queried over its HTTP API,
//   - the dashboard loaded in headless Chromium (Debian's chromium), its
//     DOM asserted after the scripts ran, and screenshots saved.
// Prometheus and Chromium come from Debian's prometheus and chromium
// packages (scripts/test installs them); a test skips, saying so, only when
// the binary is absent.
//
// DCU_SCREENSHOT_DIR=DIR saves the screenshots there (docs/screenshots is
// refreshed that way: docs/metrics.md says how).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/http_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;
using testing::FleetHarness;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string Which(const std::string& tool) {
  testing::CmdResult r = testing::RunCmd({"/bin/sh", "-c", "command -v " + tool});
  return r.exit_code == 0 ? std::string(absl::StripAsciiWhitespace(r.out)) : "";
}

absl::StatusOr<common::HttpResponse> HttpGet(int port, const std::string& path,
                                             const std::string& method = "GET",
                                             const std::string& body = "") {
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.method = method;
  req.host = "127.0.0.1";
  req.port = port;
  req.path = path;
  req.body = body;
  if (!body.empty()) req.headers.push_back({"Content-Type", "application/json"});
  return http.Send(req);
}

// One simulated fleet for every test here: built once (a deploy with a
// fail-over takes ~10 s), read by each test.
struct Fleet {
  FleetHarness h;
  std::string build;
  int controller_http = 0, agent_metrics = 0, gateway_port = 0, gateway_metrics = 0;
  std::unique_ptr<testing::ChildProcess> gateway;
  std::string failure;  // why the set-up failed, or ""
};
Fleet* fleet = nullptr;

class ObservabilityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fleet = new Fleet;
    Fleet& f = *fleet;
    auto fail = [&](const std::string& why) { f.failure = why + "\n" + f.h.Logs(); };
    f.build = std::filesystem::path(testing::BinDir()).parent_path().string();
    std::filesystem::create_directories(f.h.Join("catalog"));
    for (const char* sub : {"stacks", "models"}) {
      std::filesystem::copy(testing::SourceDir() + "/deploy/catalog/" + sub,
                            f.h.Join(std::string("catalog/") + sub),
                            std::filesystem::copy_options::recursive);
    }
    // Built as the demo builds it: the engines hold device memory while they
    // run, so both memory views of the serving devices move.
    testing::CmdResult sim =
        testing::RunCmd({"/bin/bash", testing::SourceDir() + "/scripts/lib/simfleet.sh",
                         f.h.Join("sim"), f.build, "seed000"},
                        {{"SIM_ENGINE_MEMORY", "1"}});
    if (sim.exit_code != 0) return fail("simfleet seed000: " + sim.err);
    f.controller_http = FreePort();
    if (!f.h.StartController({"--catalog", f.h.Join("catalog"), "--status-interval", "0.5",
                              "--reconcile-interval", "0.2", "--http-listen",
                              absl::StrCat("127.0.0.1:", f.controller_http)})) {
      return fail("controller did not start");
    }
    std::string d = f.h.Join("sim/k100");
    f.agent_metrics = FreePort();
    f.h.StartAgent("node-k100",
                   {"--root", d + "/root", "--model-root", d + "/models", "--env-root", d + "/envs",
                    "--hip_library", f.build + "/testlibs/hip_good/libamdhip64.so",
                    "--container-cli", "none", "--status-interval", "0.5", "--metrics-listen",
                    absl::StrCat("127.0.0.1:", f.agent_metrics), "--proc-root", "/proc"},
                   {{"FAKE_HIP_DEVICES", testing::ReadFileOrEmpty(d + "/hip-devices")},
                    {"FAKE_HIP_KFD_ROOT", d + "/root"}});
    if (!f.h.WaitNodeState("node-k100", "NODE_READY", 20)) return fail("node-k100 not Ready");
    testing::CmdResult deploy = f.h.Dcuctl(
        {"deploy", "qwen3-32b", "--tp", "4", "--watch", "--wait-timeout", "120"});
    if (deploy.exit_code != 0) return fail("deploy: " + deploy.out + deploy.err);

    f.gateway_port = FreePort();
    f.gateway_metrics = FreePort();
    f.gateway = std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{testing::BinPath("dcu-gateway"), "--controller", f.h.Addr(),
                                 "--listen", absl::StrCat("127.0.0.1:", f.gateway_port),
                                 "--metrics-listen", absl::StrCat("127.0.0.1:", f.gateway_metrics)},
        f.h.Join("gateway.log"));
    bool served = testing::WaitFor(
        [&] {
          auto r = HttpGet(f.gateway_port, "/v1/models");
          return r.ok() && absl::StrContains(r->body, "qwen3-32b");
        },
        absl::Seconds(20));
    if (!served) return fail("gateway never listed qwen3-32b: " + f.gateway->Log());
    auto completion = HttpGet(f.gateway_port, "/v1/completions", "POST",
                              R"({"model":"qwen3-32b","prompt":"1+1=","max_tokens":3})");
    if (!completion.ok() || completion->status != 200) {
      return fail("completion through the gateway failed: " + f.gateway->Log());
    }
  }
  static void TearDownTestSuite() {
    delete fleet;
    fleet = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(fleet->failure.empty()) << fleet->failure; }
};

TEST_F(ObservabilityTest, PromtoolAcceptsEveryEndpoint) {
  if (Which("promtool").empty()) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/test installs it)";
  }
  for (int port : {fleet->controller_http, fleet->agent_metrics, fleet->gateway_metrics}) {
    auto r = HttpGet(port, "/metrics");
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, 200);
    EXPECT_THAT(r->headers["content-type"], HasSubstr("text/plain; version=0.0.4"));
    std::string file = fleet->h.Join(absl::StrCat("scrape-", port, ".prom"));
    std::ofstream(file) << r->body;
    testing::CmdResult check = testing::RunCmd({"/bin/sh", "-c", "promtool check metrics < " + file});
    EXPECT_EQ(check.exit_code, 0) << "port " << port << ": " << check.out << check.err;
  }
}

TEST_F(ObservabilityTest, TheAgentRepublishesItsEnginesFiguresWithDeploymentAndReplica) {
  // The agent reads each Ready instance's /metrics (fake_vllm serves vLLM's
  // gauges) into its report; its own /metrics re-labels them.
  std::string text;
  bool seen = testing::WaitFor(
      [&] {
        auto r = HttpGet(fleet->agent_metrics, "/metrics");
        text = r.ok() ? r->body : "";
        return absl::StrContains(text, "dcu_engine_requests_running{node=\"node-k100\",instance=\"qwen3-32b-2-");
      },
      absl::Seconds(10));
  ASSERT_TRUE(seen) << text;
  EXPECT_THAT(text, ::testing::ContainsRegex(
                        R"(dcu_engine_kv_cache_usage_ratio\{node="node-k100",instance="qwen3-32b-2-[a-z0-9]+",deployment="qwen3-32b",replica="0"\} )"));
}

TEST_F(ObservabilityTest, APrometheusServerScrapesControllerAgentAndGateway) {
  std::string prometheus = Which("prometheus");
  if (prometheus.empty()) {
    GTEST_SKIP() << "prometheus not installed (Debian package prometheus; scripts/test installs it)";
  }
  const int port = FreePort();
  std::string config = fleet->h.Join("prometheus.yml");
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        << "scrape_configs:\n"
                        << "  - job_name: dcu-controller\n    static_configs:\n"
                        << "      - targets: ['127.0.0.1:" << fleet->controller_http << "']\n"
                        << "  - job_name: dcu-agent\n    static_configs:\n"
                        << "      - targets: ['127.0.0.1:" << fleet->agent_metrics << "']\n"
                        << "  - job_name: dcu-gateway\n    static_configs:\n"
                        << "      - targets: ['127.0.0.1:" << fleet->gateway_metrics << "']\n";
  testing::ChildProcess server(
      {prometheus, "--config.file=" + config, "--storage.tsdb.path=" + fleet->h.Join("tsdb"),
       absl::StrCat("--web.listen-address=127.0.0.1:", port), "--log.level=warn"},
      fleet->h.Join("prometheus.log"));
  // What Prometheus answers for an instant query, as JSON.
  auto query = [&](const std::string& promql) -> nlohmann::json {
    std::string q = absl::StrReplaceAll(promql, {{"%", "%25"}, {" ", "%20"}, {"{", "%7B"},
                                                 {"}", "%7D"}, {"\"", "%22"}, {"=", "%3D"},
                                                 {",", "%2C"}, {"+", "%2B"}, {">", "%3E"}});
    auto r = HttpGet(port, "/api/v1/query?query=" + q);
    if (!r.ok() || r->status != 200) return nlohmann::json();
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j["data"]["result"];
  };
  const std::string free_query =
      R"(dcu_device_memory_bytes{node="node-k100",device="0",view="device",kind="free"})";
  nlohmann::json free_result;
  bool scraped = testing::WaitFor(
      [&] {
        free_result = query(free_query);
        return free_result.is_array() && !free_result.empty() &&
               query(R"(sum(up{job=~"dcu-.*"}))").dump().find("\"3\"") != std::string::npos;
      },
      absl::Seconds(40));
  ASSERT_TRUE(scraped) << server.Log() << "\n" << free_result.dump();
  ASSERT_EQ(free_result.size(), 1u) << free_result.dump();
  double from_prometheus = std::stod(free_result[0]["value"][1].get<std::string>());

  // The same figure as the controller has it from the agent's report.
  auto node = HttpGet(fleet->controller_http, "/api/v1/nodes");
  ASSERT_TRUE(node.ok());
  auto nodes = nlohmann::json::parse(node->body);
  double from_report = 0;
  for (const auto& dev : nodes["nodes"][0]["inventory"]["devices"]) {
    if (dev["index"] == 0) from_report = std::stod(dev["device_free"]["bytes"].get<std::string>());
  }
  EXPECT_GT(from_report, 4.7 * (1 << 30));  // seed 000: 4.80 GiB left by the dead instance
  EXPECT_LT(from_report, 4.9 * (1 << 30));
  EXPECT_EQ(from_prometheus, from_report);

  nlohmann::json unreclaimed = query(R"(dcu_device_unreclaimed_bytes{node="node-k100",device="0"})");
  ASSERT_EQ(unreclaimed.size(), 1u);
  EXPECT_GT(std::stod(unreclaimed[0]["value"][1].get<std::string>()), 59.0 * (1 << 30));

  // Both views while serving: the engine's four devices are used by the
  // device's own view and by the SMI's; device 0's 59 GiB only by the
  // device's (seed 000). 50 GB: above what either view shows of an idle card.
  auto count = [&](const std::string& view) -> int {
    nlohmann::json r = query(absl::StrCat(R"(count(dcu_device_memory_bytes{node="node-k100",view=")", view,
                                          R"(",kind="used"} > 50000000000))"));
    return r.is_array() && r.size() == 1 ? std::stoi(r[0]["value"][1].get<std::string>()) : 0;
  };
  int device_view = 0, smi_view = 0;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        device_view = count("device");
        smi_view = count("host");
        return device_view == 5 && smi_view == 4;
      },
      absl::Seconds(30)))
      << "devices over 50 GB used: " << device_view << " by the device's view, " << smi_view
      << " by the SMI's";

  // The gateway's counter of the completion sent in the set-up.
  nlohmann::json requests;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        requests = query(R"(dcu_gateway_requests_total{model="qwen3-32b",code="200"})");
        return requests.is_array() && !requests.empty();
      },
      absl::Seconds(10)))
      << requests.dump();
  EXPECT_GE(std::stod(requests[0]["value"][1].get<std::string>()), 1);
  // And the controller's view of the deploy: one fail-over, a Ready deployment.
  nlohmann::json failovers = query("sum(dcu_controller_failovers_total)");
  ASSERT_EQ(failovers.size(), 1u) << failovers.dump();
  EXPECT_EQ(failovers[0]["value"][1], "1");
  nlohmann::json ready = query(R"(dcu_deployments{phase="Ready"})");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0]["value"][1], "1");
}

TEST_F(ObservabilityTest, TheDashboardInHeadlessChromiumShowsTheFleetAndTheFailover) {
  std::string chromium = Which("chromium");
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not installed (Debian package chromium; scripts/test installs it)";
  }
  const std::string url = absl::StrCat("http://127.0.0.1:", fleet->controller_http, "/ui/");
  auto run = [&](std::vector<std::string> extra, const std::string& target) {
    std::vector<std::string> argv = {chromium,
                                     "--headless=new",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--disable-dev-shm-usage",
                                     "--no-first-run",
                                     "--user-data-dir=" + fleet->h.Join("chromium-profile"),
                                     "--virtual-time-budget=6000",
                                     "--window-size=1400,1000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(target);
    return testing::RunCmd(argv, {}, 90);
  };
  // Cordoned for the DOM's read (what runs stays), uncordoned before the
  // screenshots: the node card says so, with the reason.
  testing::CmdResult cordon = fleet->h.Dcuctl({"cordon", "node-k100", "--reason", "firmware update"});
  ASSERT_EQ(cordon.exit_code, 0) << cordon.out << cordon.err;
  testing::CmdResult dom = run({"--dump-dom"}, url);
  // The controller's metrics count it too.
  auto scrape = HttpGet(fleet->controller_http, "/metrics");
  testing::CmdResult uncordon = fleet->h.Dcuctl({"uncordon", "node-k100"});
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_THAT(scrape->body, HasSubstr("dcu_nodes_unschedulable{reason=\"cordoned\"} 1\n"));
  EXPECT_THAT(scrape->body, HasSubstr("dcu_nodes_unschedulable{reason=\"drained\"} 0\n"));
  ASSERT_EQ(uncordon.exit_code, 0) << uncordon.out << uncordon.err;
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string& html = dom.out;
  EXPECT_THAT(html, HasSubstr(R"(data-node="node-k100" data-state="Ready" data-scheduling="disabled")"));
  EXPECT_THAT(html, HasSubstr(R"(<span class="badge held" title="firmware update">Cordoned</span>)"));
  EXPECT_THAT(html, HasSubstr("cordoned: firmware update"));
  ASSERT_THAT(html, HasSubstr("data-loaded=\"true\"")) << html.substr(0, 4000);
  // Fleet: device 0 of node-k100 shown as unreclaimed, with its figure;
  // device 1 not.
  EXPECT_THAT(html, HasSubstr(R"(<div class="device unreclaimed" data-node="node-k100" data-device="0")"));
  EXPECT_THAT(html, HasSubstr(R"(<div class="device" data-node="node-k100" data-device="1")"));
  // A serving device: its engine is its one holder.
  EXPECT_THAT(html, HasSubstr(R"(data-device="1" data-unreclaimed-bytes="0" data-holders="1")"));
  EXPECT_THAT(html, HasSubstr("59.18 GiB unreclaimed"));
  EXPECT_THAT(html, HasSubstr("gfx928"));
  EXPECT_THAT(html, HasSubstr("data-state=\"Ready\""));
  // Deployments: the fail-over in qwen3-32b's timeline, after its failure.
  size_t box = html.find(R"(data-deployment="qwen3-32b")");
  ASSERT_NE(box, std::string::npos);
  size_t failed = html.find(R"(data-reason="Failed")", box);
  size_t failover = html.find(R"(data-reason="Failover")", box);
  ASSERT_NE(failover, std::string::npos);
  EXPECT_LT(failed, failover);
  EXPECT_THAT(html, HasSubstr("triton_unsupported_gpu_target"));
  // The stack matrix: a cell per (arch, stack) with evidence.
  EXPECT_THAT(html, HasSubstr(R"(data-stack="vllm-0.9.2-bare-dtk2504" data-arch="gfx928")"));

  const char* env_dir = std::getenv("DCU_SCREENSHOT_DIR");
  std::string dir = env_dir && *env_dir ? env_dir : fleet->h.Join("screenshots");
  std::filesystem::create_directories(dir);
  for (const char* view : {"fleet", "deployments", "stacks"}) {
    std::string png = absl::StrCat(dir, "/dashboard-", view, ".png");
    std::filesystem::remove(png);
    testing::CmdResult shot = run({"--screenshot=" + png, "--hide-scrollbars"}, url + "#" + view);
    EXPECT_EQ(shot.exit_code, 0) << shot.err;
    ASSERT_TRUE(std::filesystem::exists(png)) << shot.err;
    EXPECT_GT(std::filesystem::file_size(png), 10000u) << png;  // a rendered page, not a blank one
  }
}

}  // namespace
}  // namespace dcu
