// Model distribution with real processes (issue 19): a controller and two
// agents on loopback, Qwen3-32B only on node-a. `dcuctl model copy` makes
// node-b fetch it from node-a's ModelTransferService (verified), after which
// a deploy pinned to node-b launches and serves; the same with node-a's agent
// SIGKILLed half-way and the copy resumed; a shard corrupted at the source
// (same length and header, caught by its sha256) refused with the reason and
// nothing left half-written in node-b's model root.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/hash.h"
#include "common/http_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fleet_harness.h"
#include "tests/testing/range_http_server.h"

namespace dcu {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::FleetHarness;

constexpr int kShards = 17;

// An int64 of a proto's JSON (a string there) or 0.
int64_t I64(const nlohmann::json& j, const std::string& key) {
  if (!j.contains(key)) return 0;
  if (j[key].is_string()) return std::stoll(j[key].get<std::string>());
  if (j[key].is_number()) return j[key].get<int64_t>();
  return 0;
}
constexpr int64_t kModelBytes = 48ll << 20;  // real safetensors headers, sparse data

class ModelCopyE2ETest : public ::testing::Test {
 protected:
  void SetUp() override { Prepare({}); }
  void Prepare(const std::vector<std::string>& controller_extra) {
    build_ = fs::path(testing::BinDir()).parent_path().string();
    fs::create_directories(h_.Join("catalog"));
    for (const char* sub : {"stacks", "models"}) {
      fs::copy(testing::SourceDir() + "/deploy/catalog/" + sub, h_.Join(std::string("catalog/") + sub),
               fs::copy_options::recursive);
    }
    for (const char* n : {"a", "b"}) {
      auto r = testing::RunCmd({"/bin/bash", testing::SourceDir() + "/scripts/lib/simfleet.sh",
                                h_.Join(absl::StrCat("sim-", n)), build_, "seed000"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      fs::remove_all(h_.Join(absl::StrCat("sim-", n, "/k100/envs/vllm-0.11.0-dtk2604")));
    }
    // node-a: a small Qwen3-32B layout (17 shards, 48 MiB); node-b: none.
    fs::remove_all(ModelA());
    fs::remove_all(h_.Join("sim-b/k100/models/Qwen3-32B"));
    auto r = testing::RunCmd(
        {"/bin/bash", "-c",
         absl::StrCat("SIM_REPO='", testing::SourceDir(), "'; source '", testing::SourceDir(),
                      "/scripts/lib/simfleet.sh'; sim_model_dir '", ModelA(), "' '", testing::SourceDir(),
                      "/tests/data/model-configs/qwen3-32b-seed000-qwen2-no-head-dim/config.json' ", kShards, " ",
                      kModelBytes)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> args = {"--catalog", h_.Join("catalog"), "--status-interval", "0.3",
                                     "--reconcile-interval", "0.2", "--not-ready-after", "5"};
    args.insert(args.end(), controller_extra.begin(), controller_extra.end());
    ASSERT_TRUE(h_.StartController(args));
  }
  std::string ModelA() const { return h_.Join("sim-a/k100/models/Qwen3-32B"); }
  std::string ModelB() const { return h_.Join("sim-b/k100/models/Qwen3-32B"); }
  std::string Shard(int i) const {
    char name[64];
    snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", i, kShards);
    return name;
  }
  // Every device of node `n` with only 1 GiB free (device view): busy, so no
  // deployment fits there.
  void MakeDevicesBusy(const std::string& n) {
    const std::string file = h_.Join(absl::StrCat("sim-", n, "/k100/hip-devices"));
    const std::string text = testing::ReadFileOrEmpty(file);
    std::string out;
    for (absl::string_view dev : absl::StrSplit(absl::StripAsciiWhitespace(text), ';')) {
      std::vector<std::string> f = absl::StrSplit(dev, ',');  // bus,free,total,arch
      ASSERT_EQ(f.size(), 4u) << dev;
      f[1] = std::to_string(1ll << 30);
      absl::StrAppend(&out, out.empty() ? "" : ";", absl::StrJoin(f, ","));
    }
    std::ofstream(file) << out << "\n";
  }
  void StartAgent(const std::string& n, std::vector<std::string> extra = {}) {
    const std::string sim = h_.Join("sim-" + n);
    std::vector<std::string> args = {"--root", sim + "/k100/root", "--model-root", sim + "/k100/models",
                                     "--env-root", sim + "/k100/envs", "--hip_library",
                                     build_ + "/testlibs/hip_good/libamdhip64.so", "--container-cli", "none",
                                     "--transfer-listen", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    h_.StartAgent("node-" + n, args,
                  {{"FAKE_HIP_DEVICES", testing::ReadFileOrEmpty(sim + "/k100/hip-devices")}});
    ASSERT_TRUE(h_.WaitNodeState("node-" + n, "NODE_READY", 30)) << h_.Logs();
  }
  nlohmann::json Node(const std::string& name) { return h_.Json({"get", "nodes", name}); }
  // node-b's report of its copy of Qwen3-32B ({} when none).
  nlohmann::json Transfer() {
    nlohmann::json n = Node("node-b");
    if (!n.contains("inventory")) return {};
    for (const auto& t : n["inventory"].value("transfers", nlohmann::json::array())) {
      if (t.value("model_dir", "") == "Qwen3-32B") return t;
    }
    return {};
  }
  bool NodeBReportsTheModel() {
    nlohmann::json n = Node("node-b");
    if (!n.contains("inventory")) return false;
    for (const auto& m : n["inventory"].value("models", nlohmann::json::array())) {
      if (m.value("path", "") == ModelB()) return m["weights"].value("verdict", "") == "WEIGHTS_CLEAN";
    }
    return false;
  }
  void ExpectSameFiles() {
    for (const auto& e : fs::directory_iterator(ModelA())) {
      const std::string name = e.path().filename().string();
      ASSERT_TRUE(fs::exists(ModelB() + "/" + name)) << name;
      EXPECT_EQ(fs::file_size(ModelB() + "/" + name), fs::file_size(e.path())) << name;
      EXPECT_EQ(common::Sha256Hex(testing::ReadFileOrEmpty(ModelB() + "/" + name)),
                common::Sha256Hex(testing::ReadFileOrEmpty(e.path().string())))
          << name;
    }
  }
  std::string Phase(const std::string& name) {
    nlohmann::json d = h_.Deployment(name);
    if (!d.contains("deployment")) return "";
    return d["deployment"]["status"].value("phase", "");
  }

  FleetHarness h_;
  std::string build_;
};

TEST_F(ModelCopyE2ETest, NodeBFetchesFromNodeAVerifiedThenAPinnedDeployServes) {
  StartAgent("a");
  StartAgent("b");
  // Before: only node-a has it, and `get models` says so.
  auto models = h_.Dcuctl({"get", "models"});
  ASSERT_EQ(models.exit_code, 0) << models.err;
  EXPECT_THAT(models.out, HasSubstr("node-a"));
  EXPECT_THAT(models.out, ::testing::Not(HasSubstr("node-b")));
  // A dry run pinned to node-b says it would copy first.
  auto pinned = h_.Dcuctl({"deploy", "qwen3-32b", "--node", "node-b", "--dry-run"});
  EXPECT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_THAT(pinned.out, HasSubstr("would copy the model first: node 'node-b' lacks qwen3-32b"));

  auto r = h_.Dcuctl({"model", "copy", "qwen3-32b", "--to", "node-b", "--wait", "--timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << h_.Logs();
  EXPECT_THAT(r.out, HasSubstr("node 'node-b' is copying Qwen3-32B from node 'node-a'"));
  EXPECT_THAT(r.out, HasSubstr("copied Qwen3-32B from node-a"));
  ExpectSameFiles();
  EXPECT_FALSE(fs::exists(h_.Join("sim-b/k100/models/.partial/Qwen3-32B")));
  ASSERT_TRUE(testing::WaitFor([&] { return NodeBReportsTheModel(); }, absl::Seconds(20))) << Node("node-b").dump();
  // The controller's catalog records node-b's copy on its next pass.
  EXPECT_TRUE(testing::WaitFor(
      [&] { return h_.Dcuctl({"get", "models"}).out.find(",node-b") != std::string::npos; },
      absl::Seconds(20)))
      << h_.Dcuctl({"get", "models"}).out;
  nlohmann::json t = Transfer();
  EXPECT_EQ(t.value("state", ""), "MODEL_TRANSFER_DONE") << t.dump();
  EXPECT_EQ(I64(t, "bytes_total"), I64(t, "bytes_done"));
  EXPECT_GT(I64(t, "bytes_total"), kModelBytes);

  // A second copy is refused: node-b has it now.
  auto again = h_.Dcuctl({"model", "copy", "qwen3-32b", "--to", "node-b"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.err, HasSubstr("already has"));

  // Launch from the copy, pinned to node-b, and serve.
  auto d = h_.Dcuctl({"deploy", "qwen3-32b", "--node", "node-b", "--tp", "2", "--wait", "--wait-timeout", "90"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err << h_.Logs();
  nlohmann::json dep = h_.Deployment("qwen3-32b");
  EXPECT_EQ(Phase("qwen3-32b"), "DEPLOYMENT_READY") << dep.dump();
  EXPECT_THAT(dep.dump(), HasSubstr(ModelB()));
}

TEST_F(ModelCopyE2ETest, DeployPinnedToANodeWithoutTheModelCopiesItFirstThenServes) {
  // 16 MiB/s: the copy takes about 3 s, so its progress can be seen.
  StartAgent("a", {"--transfer-max-rate", "16MiB"});
  StartAgent("b");
  auto d = h_.Dcuctl({"deploy", "qwen3-32b", "--node", "node-b", "--tp", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err << h_.Logs();
  // `logs -f` at once, as a person types it after deploy: it waits for the
  // launch, saying why, then shows the log from its first line (--tail 3
  // is how much of a log already written to show). Before, it ended at
  // once: "has not launched yet" (exit 3).
  testing::ChildProcess follow({testing::BinPath("dcuctl"), "--controller", h_.Addr(), "logs", "qwen3-32b",
                                "-f", "--tail", "3"},
                               h_.Join("follow.log"));
  // While it copies, the deployment (deploy --watch, describe) says how far.
  std::string copying;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        nlohmann::json dep = h_.Deployment("qwen3-32b");
        if (!dep.contains("deployment")) return false;
        copying = dep["deployment"]["status"].value("message", "");
        return absl::StrContains(copying, "node-b: copying Qwen3-32B from node-a: ") &&
               absl::StrContains(copying, "%)") && absl::StrContains(copying, "before the launch");
      },
      absl::Seconds(30)))
      << copying;
  EXPECT_EQ(Phase("qwen3-32b"), "DEPLOYMENT_PENDING");
  ASSERT_TRUE(testing::WaitFor([&] { return Phase("qwen3-32b") == "DEPLOYMENT_READY"; }, absl::Seconds(120)))
      << h_.Deployment("qwen3-32b").dump() << h_.Logs();
  ExpectSameFiles();
  nlohmann::json dep = h_.Deployment("qwen3-32b");
  EXPECT_THAT(dep.dump(), HasSubstr(ModelB()));
  EXPECT_THAT(dep.dump(), HasSubstr("ModelCopyStarted")) << dep.dump();
  EXPECT_EQ(Transfer().value("state", ""), "MODEL_TRANSFER_DONE") << Transfer().dump();
  EXPECT_TRUE(testing::WaitFor(
      [&] { return follow.Log().find("Application startup complete") != std::string::npos; },
      absl::Seconds(20)))
      << follow.Log();
  EXPECT_TRUE(follow.Running()) << follow.Log();
  follow.Signal(SIGTERM);
  follow.Wait(absl::Seconds(10));
  const std::string log = follow.Log();
  EXPECT_THAT(log, HasSubstr("--- waiting: deployment 'qwen3-32b' has not launched yet: node-b: copying "
                             "Qwen3-32B from node-a"));
  EXPECT_THAT(log, HasSubstr("dcufleet: starting instance 'qwen3-32b-")) << log;
  EXPECT_EQ(log.find("not shown"), std::string::npos) << log;
}

TEST_F(ModelCopyE2ETest, UnpinnedDeployCopiesToTheNodeThatFitsWhenTheNodeWithTheModelCannot) {
  // node-a has the model but its devices are busy; node-b fits but lacks
  // it. The scheduler places the deployment on node-b copy-first: node-b
  // fetches from node-a, then launches and serves.
  MakeDevicesBusy("a");
  ASSERT_FALSE(HasFatalFailure());
  StartAgent("a", {"--transfer-max-rate", "16MiB"});
  StartAgent("b");
  auto dry = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("would copy the model first: no node that has qwen3-32b can take it; node "
                                 "'node-b' can once it copies Qwen3-32B from node 'node-a'"));
  auto d = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err << h_.Logs();
  std::string copying;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        nlohmann::json dep = h_.Deployment("qwen3-32b");
        if (!dep.contains("deployment")) return false;
        copying = dep["deployment"]["status"].value("message", "");
        return absl::StrContains(copying, "node-b: copying Qwen3-32B from node-a: ") &&
               absl::StrContains(copying, "%)") && absl::StrContains(copying, "no node that has qwen3-32b can take it");
      },
      absl::Seconds(30)))
      << copying << h_.Deployment("qwen3-32b").dump();
  EXPECT_EQ(Phase("qwen3-32b"), "DEPLOYMENT_PENDING");
  // Why not node-a: named with its devices.
  nlohmann::json pending = h_.Deployment("qwen3-32b");
  std::string node_a_reason;
  for (const auto& rj : pending["deployment"]["status"].value("rejections", nlohmann::json::array())) {
    if (rj.value("node", "") == "node-a") node_a_reason = rj.value("reason", "");
  }
  EXPECT_THAT(node_a_reason, HasSubstr("devices have")) << pending.dump();
  ASSERT_TRUE(testing::WaitFor([&] { return Phase("qwen3-32b") == "DEPLOYMENT_READY"; }, absl::Seconds(120)))
      << h_.Deployment("qwen3-32b").dump() << h_.Logs();
  ExpectSameFiles();
  nlohmann::json dep = h_.Deployment("qwen3-32b");
  EXPECT_THAT(dep.dump(), HasSubstr(ModelB()));
  EXPECT_THAT(dep.dump(), HasSubstr("ModelCopyStarted"));
  EXPECT_EQ(Transfer().value("state", ""), "MODEL_TRANSFER_DONE") << Transfer().dump();
  // It serves from node-b.
  const std::string endpoint = dep["deployment"]["status"].value("endpoint", "");
  EXPECT_FALSE(endpoint.empty());
  const size_t colon = endpoint.rfind(':');
  ASSERT_NE(colon, std::string::npos) << endpoint;
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.method = "GET";
  req.host = "127.0.0.1";
  req.port = std::stoi(endpoint.substr(colon + 1));
  req.path = "/v1/models";
  auto served = http.Send(req);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(served->status, 200);
  EXPECT_THAT(served->body, HasSubstr("qwen3-32b"));
}

TEST_F(ModelCopyE2ETest, SourceKilledHalfWayThenTheCopyResumes) {
  // 8 MiB/s: the 48 MiB copy takes about 6 s, long enough to kill node-a's
  // agent in the middle.
  StartAgent("a", {"--transfer-max-rate", "8MiB"});
  StartAgent("b");
  auto r = h_.Dcuctl({"model", "copy", "Qwen3-32B", "--to", "node-b"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return I64(Transfer(), "bytes_done") > kModelBytes / 4;
      },
      absl::Seconds(30)))
      << Transfer().dump();
  h_.StopAgent("node-a", SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] { return Transfer().value("state", "") == "MODEL_TRANSFER_FAILED"; },
                               absl::Seconds(30)))
      << Transfer().dump();
  nlohmann::json failed = Transfer();
  EXPECT_THAT(failed.value("message", ""), HasSubstr("fetch again to resume")) << failed.dump();
  EXPECT_FALSE(fs::exists(ModelB()));  // nothing half-written is visible as a model
  int64_t kept = 0;
  for (const auto& e : fs::directory_iterator(h_.Join("sim-b/k100/models/.partial/Qwen3-32B"))) {
    kept += static_cast<int64_t>(fs::file_size(e.path()));
  }
  EXPECT_GT(kept, kModelBytes / 4);
  EXPECT_LT(kept, kModelBytes);

  StartAgent("a");  // back, without the cap
  r = h_.Dcuctl({"model", "copy", "Qwen3-32B", "--to", "node-b", "--wait", "--timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << h_.Logs();
  EXPECT_THAT(r.out, HasSubstr("resumed"));
  nlohmann::json t = Transfer();
  EXPECT_EQ(t.value("state", ""), "MODEL_TRANSFER_DONE") << t.dump();
  EXPECT_GE(I64(t, "bytes_resumed"), kept - (1 << 20)) << t.dump();
  ExpectSameFiles();
  ASSERT_TRUE(testing::WaitFor([&] { return NodeBReportsTheModel(); }, absl::Seconds(20)));
}

TEST_F(ModelCopyE2ETest, ShardCorruptedAtTheSourceIsRefusedWithTheReason) {
  // A manifest for the good files, then one byte of shard 5's data flipped:
  // its length and header still pass node-a's own checks (no content
  // check on a rescan), so only the copy's sha256 can catch it.
  {
    std::ofstream m(ModelA() + "/sha256sums");
    for (const auto& e : fs::directory_iterator(ModelA())) {
      if (e.path().filename() == "sha256sums") continue;
      m << common::Sha256Hex(testing::ReadFileOrEmpty(e.path().string())) << "  " << e.path().filename().string()
        << "\n";
    }
  }
  {
    const std::string shard = ModelA() + "/" + Shard(5);
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(shard) - 100));
    f.put('\x01');
  }
  StartAgent("a");
  StartAgent("b");
  auto r = h_.Dcuctl({"model", "copy", "qwen3-32b", "--to", "node-b", "--wait", "--timeout", "60"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("file '", Shard(5), "' from node 'node-a'")));
  EXPECT_THAT(r.err, HasSubstr("the manifest says"));
  EXPECT_THAT(r.err, HasSubstr("the partial copy was removed"));
  EXPECT_FALSE(fs::exists(ModelB()));
  EXPECT_FALSE(fs::exists(h_.Join("sim-b/k100/models/.partial/Qwen3-32B")));

  // A truncated shard is seen by node-a's own checks: the controller refuses
  // to copy from a damaged copy, naming it.
  fs::resize_file(ModelA() + "/" + Shard(3), fs::file_size(ModelA() + "/" + Shard(3)) - 1000);
  h_.StopAgent("node-a", SIGKILL);
  StartAgent("a");
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto c = h_.Dcuctl({"model", "copy", "qwen3-32b", "--to", "node-b"});
        return c.exit_code != 0 && c.err.find("is damaged") != std::string::npos;
      },
      absl::Seconds(20)));
  auto c = h_.Dcuctl({"model", "copy", "qwen3-32b", "--to", "node-b"});
  EXPECT_EQ(c.exit_code, 3) << c.err;
  EXPECT_THAT(c.err, HasSubstr(Shard(3)));
  auto models = h_.Dcuctl({"get", "models"});
  // (config! is the seed's relabelled config.json, which the overlay fixes.)
  EXPECT_THAT(models.out, HasSubstr("node-a(config!)(damaged)"));
}

// The model on no node, only on an HTTP mirror laid out like the Hugging
// Face hub (a real server on loopback, with Range): an unpinned deploy
// places on a node that fits, which fetches every shard from the mirror
// (verified), then launches and serves.
class ModelMirrorE2ETest : public ModelCopyE2ETest {
 protected:
  void SetUp() override {
    mirror_ = std::make_unique<testing::RangeHttpServer>(h_.Join("mirror/Qwen/Qwen3-32B"));
    Prepare({"--model-mirror", mirror_->url()});
    if (HasFatalFailure()) return;
    fs::create_directories(h_.Join("mirror/Qwen"));
    fs::rename(ModelA(), h_.Join("mirror/Qwen/Qwen3-32B"));
  }
  std::unique_ptr<testing::RangeHttpServer> mirror_;
};

TEST_F(ModelMirrorE2ETest, UnpinnedDeployFetchesFromTheMirrorWhenNoNodeHasTheModel) {
  StartAgent("a");
  StartAgent("b");
  auto d = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err << h_.Logs();
  ASSERT_TRUE(testing::WaitFor([&] { return Phase("qwen3-32b") == "DEPLOYMENT_READY"; }, absl::Seconds(120)))
      << h_.Deployment("qwen3-32b").dump() << h_.Logs();
  nlohmann::json dep = h_.Deployment("qwen3-32b");
  // node-a comes first by name: it fetched the copy.
  const std::string copy = h_.Join("sim-a/k100/models/Qwen3-32B");
  EXPECT_THAT(dep.dump(), HasSubstr(copy));
  EXPECT_THAT(dep.dump(), HasSubstr(absl::StrCat("from mirror ", mirror_->url(), "/Qwen/Qwen3-32B")));
  for (const auto& e : fs::directory_iterator(h_.Join("mirror/Qwen/Qwen3-32B"))) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(common::Sha256Hex(testing::ReadFileOrEmpty(copy + "/" + name)),
              common::Sha256Hex(testing::ReadFileOrEmpty(e.path().string())))
        << name;
  }
  int gets = 0;
  for (const auto& r : mirror_->Requests()) gets += absl::StartsWith(r, "GET model-");
  EXPECT_EQ(gets, kShards);  // every shard fetched once, from the mirror
  EXPECT_FALSE(fs::exists(h_.Join("sim-b/k100/models/Qwen3-32B")));
}

TEST_F(ModelMirrorE2ETest, ModelCopyOnRequestComesFromTheMirrorWhenNoNodeHasIt) {
  StartAgent("b");
  auto copied = h_.Dcuctl({"model", "copy", "qwen3-32b", "--to", "node-b", "--wait", "--timeout", "60"});
  ASSERT_EQ(copied.exit_code, 0) << copied.out << copied.err << h_.Logs();
  EXPECT_THAT(copied.out, HasSubstr(absl::StrCat("from ", mirror_->url(), "/Qwen/Qwen3-32B")));
  EXPECT_EQ(common::Sha256Hex(testing::ReadFileOrEmpty(ModelB() + "/" + Shard(5))),
            common::Sha256Hex(testing::ReadFileOrEmpty(h_.Join("mirror/Qwen/Qwen3-32B/") + Shard(5))));
}

// The model on no node, in a shared file system's directory every node
// mounts (HPC centres have one): an unpinned deploy places on a node that
// fits, whose agent copies it from the shared directory into its model root
// (verified, a manifest recorded), then launches and serves. `dcuctl model
// copy --from-dir` does the same on request, and a directory the agent was
// not told to trust is refused by the agent, saying how to allow it.
class ModelSharedDirE2ETest : public ModelCopyE2ETest {
 protected:
  void SetUp() override {
    Prepare({"--model-shared-dir", h_.Join("shared")});
    if (HasFatalFailure()) return;
    fs::create_directories(h_.Join("shared"));
    fs::rename(ModelA(), h_.Join("shared/Qwen3-32B"));
  }
};

TEST_F(ModelSharedDirE2ETest, UnpinnedDeployCopiesFromTheSharedDirectoryAndCopyOnRequest) {
  StartAgent("a", {"--shared-model-root", h_.Join("shared")});
  StartAgent("b", {"--shared-model-root", h_.Join("shared") + "/"});
  auto d = h_.Dcuctl({"deploy", "qwen3-32b", "--tp", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err << h_.Logs();
  ASSERT_TRUE(testing::WaitFor([&] { return Phase("qwen3-32b") == "DEPLOYMENT_READY"; }, absl::Seconds(120)))
      << h_.Deployment("qwen3-32b").dump() << h_.Logs();
  nlohmann::json dep = h_.Deployment("qwen3-32b");
  EXPECT_THAT(dep.dump(), HasSubstr(absl::StrCat("from shared directory ", h_.Join("shared"), "/Qwen3-32B")));
  // node-a comes first by name: it made the copy, every file as in the
  // shared directory, and recorded what arrived.
  const std::string copy = ModelA();
  for (const auto& e : fs::directory_iterator(h_.Join("shared/Qwen3-32B"))) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(common::Sha256Hex(testing::ReadFileOrEmpty(copy + "/" + name)),
              common::Sha256Hex(testing::ReadFileOrEmpty(e.path().string())))
        << name;
  }
  const std::string manifest = testing::ReadFileOrEmpty(copy + "/sha256sums");
  EXPECT_THAT(manifest, HasSubstr(Shard(kShards)));
  EXPECT_FALSE(fs::exists(h_.Join("shared/Qwen3-32B/sha256sums")));  // the shared copy is only read

  // On request, to node-b; a directory node-b's agent does not trust first.
  auto refused = h_.Dcuctl({"model", "copy", "qwen3-32b", "--to", "node-b", "--from-dir", "/etc"});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("is not one of this agent's --shared-model-root"));
  EXPECT_FALSE(fs::exists(ModelB()));
  auto copied = h_.Dcuctl(
      {"model", "copy", "qwen3-32b", "--to", "node-b", "--from-dir", h_.Join("shared"), "--wait", "--timeout", "60"});
  ASSERT_EQ(copied.exit_code, 0) << copied.out << copied.err << h_.Logs();
  EXPECT_THAT(copied.out, HasSubstr(absl::StrCat("from ", h_.Join("shared"))));
  EXPECT_THAT(copied.out, HasSubstr("sha256sums recorded"));
  EXPECT_EQ(common::Sha256Hex(testing::ReadFileOrEmpty(ModelB() + "/" + Shard(3))),
            common::Sha256Hex(testing::ReadFileOrEmpty(h_.Join("shared/Qwen3-32B/") + Shard(3))));
}

}  // namespace
}  // namespace dcu
