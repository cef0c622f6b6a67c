// Node-to-node transfer over real gRPC on loopback: an agent's
// ModelTransferService serving its model root, a PeerModelSource and a
// ModelFetcher on the other side; the server shut down half-way and the
// fetch resumed from a restarted one; hostile names refused by the server.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/fetch/model_fetch.h"
#include "agent/transfer/model_transfers.h"
#include "agent/transfer/transfer_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/safetensors_writer.h"
#include "tests/testing/test_env.h"

namespace dcu::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Served {
  std::unique_ptr<ModelTransferServiceImpl> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

Served Serve(const std::string& root, size_t chunk_bytes = 64 << 10) {
  Served s;
  s.service = std::make_unique<ModelTransferServiceImpl>("node-a", std::vector<std::string>{root},
                                                         /*require_node_peer=*/false, chunk_bytes);
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &s.port);
  b.RegisterService(s.service.get());
  s.server = b.BuildAndStart();
  return s;
}

class ModelTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_.Join("a/Tiny"));
    fs::create_directories(tmp_.Join("b"));
    model_.hidden = 512;
    model_.intermediate = 1024;
    model_.vocab = 4096;
    model_.layers = 4;
    model_.shards = 2;
    testing::WriteTinyModel(tmp_.Join("a/Tiny"), model_);
    for (const auto& e : fs::directory_iterator(tmp_.Join("a/Tiny"))) total_ += fs::file_size(e.path());
  }
  std::unique_ptr<PeerModelSource> Peer(int port) {
    return std::make_unique<PeerModelSource>(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
  }
  testing::TempDir tmp_;
  testing::TinyModel model_;
  int64_t total_ = 0;
};

TEST_F(ModelTransferTest, FetchesFromAPeerAgentVerified) {
  Served a = Serve(tmp_.Join("a"));
  auto peer = Peer(a.port);
  ModelFetcher fetcher(tmp_.Join("b"));
  FetchOptions o;
  o.reserve_bytes = 0;
  auto r = fetcher.Fetch(*peer, "Tiny", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes_copied, total_);
  EXPECT_EQ(r->weights.verdict(), dcufleet::v1::WEIGHTS_CLEAN);
  EXPECT_EQ(peer->Describe(), absl::StrCat("node 'node-a' (127.0.0.1:", a.port, ")"));
  for (const auto& e : fs::directory_iterator(tmp_.Join("a/Tiny"))) {
    EXPECT_EQ(testing::ReadFileOrEmpty(tmp_.Join("b/Tiny/") + e.path().filename().string()),
              testing::ReadFileOrEmpty(e.path().string()));
  }
  a.server->Shutdown();
}

TEST_F(ModelTransferTest, PeerGoneHalfWayThenResumedFromAnotherServer) {
  Served a = Serve(tmp_.Join("a"), /*chunk_bytes=*/16 << 10);
  auto peer = Peer(a.port);
  ModelFetcher fetcher(tmp_.Join("b"));
  std::atomic<bool> stopped{false};
  std::thread stopper;
  FetchOptions o;
  o.reserve_bytes = 0;
  o.progress_every = absl::ZeroDuration();
  o.progress = [&](const FetchProgress& p) {
    if (!stopped && p.bytes_done >= total_ / 2) {
      stopped = true;
      // The source node's agent goes away mid-stream.
      stopper = std::thread([&] { a.server->Shutdown(std::chrono::system_clock::now()); });
    }
  };
  auto first = fetcher.Fetch(*peer, "Tiny", o);
  stopper.join();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  EXPECT_FALSE(fs::exists(tmp_.Join("b/Tiny")));

  Served again = Serve(tmp_.Join("a"));
  auto peer2 = Peer(again.port);
  FetchOptions o2;
  o2.reserve_bytes = 0;
  auto second = fetcher.Fetch(*peer2, "Tiny", o2);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GE(second->bytes_resumed, total_ / 2 - (16 << 10));
  EXPECT_EQ(second->bytes_resumed + second->bytes_copied, total_);
  EXPECT_EQ(second->weights.verdict(), dcufleet::v1::WEIGHTS_CLEAN);
  again.server->Shutdown();
}

TEST_F(ModelTransferTest, CorruptShardAtThePeerIsRefusedWithTheReason) {
  const std::string shard = tmp_.Join("a/Tiny/model-00002-of-00002.safetensors");
  fs::resize_file(shard, fs::file_size(shard) - 7);
  Served a = Serve(tmp_.Join("a"));
  auto peer = Peer(a.port);
  ModelFetcher fetcher(tmp_.Join("b"));
  FetchOptions o;
  o.reserve_bytes = 0;
  auto r = fetcher.Fetch(*peer, "Tiny", o);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("model-00002-of-00002.safetensors"));
  EXPECT_THAT(r.status().message(), HasSubstr("node 'node-a'"));
  EXPECT_FALSE(fs::exists(tmp_.Join("b/Tiny")));
  EXPECT_FALSE(fs::exists(fetcher.PartialDir("Tiny")));
  a.server->Shutdown();
}

TEST_F(ModelTransferTest, ServerConfinesNamesToTheModelDirectory) {
  fs::create_symlink("/etc/hostname", tmp_.Join("a/Tiny/escape"));
  Served a = Serve(tmp_.Join("a"));
  auto peer = Peer(a.port);
  auto noop = [](absl::string_view) { return absl::OkStatus(); };
  EXPECT_EQ(peer->Read("Tiny", "../../etc/passwd", 0, noop).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(peer->Read("Tiny", "/etc/passwd", 0, noop).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(peer->Read("..", "etc/passwd", 0, noop).code(), absl::StatusCode::kInvalidArgument);
  absl::Status escaped = peer->Read("Tiny", "escape", 0, noop);
  EXPECT_EQ(escaped.code(), absl::StatusCode::kPermissionDenied) << escaped;
  EXPECT_THAT(escaped.message(), HasSubstr("resolves outside its directory"));
  auto absent = peer->List("Absent");
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(absent.status().message(), HasSubstr("node 'node-a' has no model directory 'Absent'"));
  a.server->Shutdown();
}

TEST_F(ModelTransferTest, NodeOnlyServiceRefusesAnUnauthenticatedCaller) {
  ModelTransferServiceImpl service("node-a", {tmp_.Join("a")}, /*require_node_peer=*/true);
  int port = 0;
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&service);
  auto server = b.BuildAndStart();
  auto peer = Peer(port);
  auto r = peer->List("Tiny");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("node certificate"));
  server->Shutdown();
}

// Issue 19: a shared file system's directory as the source. The agent
// copies from it only when it was started with it as --shared-model-root
// (the controller names a path; the node decides what it may read), and the
// transfer reports the directory as its source.
TEST_F(ModelTransferTest, SharedDirectoryCopiesOnlyFromTheAgentsSharedRoots) {
  ModelTransfers transfers(tmp_.Join("b"), [](const std::string&) { return grpc::InsecureChannelCredentials(); },
                           /*tls=*/false, {}, {tmp_.Join("a") + "/"});
  dcufleet::v1::FetchModelCommand cmd;
  cmd.set_model_dir("Tiny");
  cmd.set_source_dir("/etc");
  absl::Status refused = transfers.Start(cmd);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("is not one of this agent's --shared-model-root"));
  cmd.set_source_dir("relative/a");
  EXPECT_EQ(transfers.Start(cmd).code(), absl::StatusCode::kPermissionDenied);

  cmd.set_source_dir(tmp_.Join("a"));
  ASSERT_TRUE(transfers.Start(cmd).ok());
  dcufleet::v1::ModelTransfer done;
  for (int i = 0; i < 200; ++i) {
    auto snap = transfers.Snapshot();
    if (!snap.empty() && snap[0].state() != dcufleet::v1::MODEL_TRANSFER_RUNNING) {
      done = snap[0];
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(done.state(), dcufleet::v1::MODEL_TRANSFER_DONE) << done.DebugString();
  EXPECT_EQ(done.source_address(), tmp_.Join("a"));
  EXPECT_THAT(done.message(), HasSubstr("sha256sums recorded"));
  for (const auto& e : fs::directory_iterator(tmp_.Join("a/Tiny"))) {
    EXPECT_EQ(testing::ReadFileOrEmpty(tmp_.Join("b/Tiny/") + e.path().filename().string()),
              testing::ReadFileOrEmpty(e.path().string()));
  }
  transfers.Shutdown();
}

}  // namespace
}  // namespace dcu::agent
