// Node-to-node model transfer over TLS, the way two agents started with
// --tls-ca/--tls-cert/--tls-key run it (agent/main.cc): the source's
// ModelTransferService behind MakeTransferServerCredentials (its node
// certificate, client certificates required and verified against the fleet
// CA), the other side a PeerModelSource with its own node certificate that
// checks the source's certificate names the node it asked for. Certificates
// made by `dcuctl pki` (the real openssl CLI); real gRPC on loopback.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "agent/fetch/model_fetch.h"
#include "agent/transfer/transfer_service.h"
#include "common/tls_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/safetensors_writer.h"
#include "tests/testing/test_env.h"
#include "tests/unit/security/security_test_util.h"

namespace dcu::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TransferTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    testing::MakeStandardPki(dir_->Join("pki"));
    // A second, unrelated fleet with its own node-b.
    testing::Pki({"init", dir_->Join("other")});
    testing::Pki({"issue-node", dir_->Join("other"), "node-b"});
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string P(const std::string& f) { return dir_->Join("pki/" + f); }
  static std::string Other(const std::string& f) { return dir_->Join("other/" + f); }

  void SetUp() override {
    fs::create_directories(tmp_.Join("a/Tiny"));
    fs::create_directories(tmp_.Join("b"));
    testing::WriteTinyModel(tmp_.Join("a/Tiny"), testing::TinyModel{});  // two shards
    Serve(P("nodes/node-a.crt"), P("nodes/node-a.key"));
  }
  // node-a serves its model root as its agent does with TLS on.
  void Serve(const std::string& cert, const std::string& key) {
    if (server_) server_->Shutdown();
    port_ = 0;
    auto creds = MakeTransferServerCredentials({cert, key, P("ca.crt")});
    ASSERT_TRUE(creds.ok()) << creds.status();
    service_ = std::make_unique<ModelTransferServiceImpl>(
        "node-a", std::vector<std::string>{tmp_.Join("a")}, /*require_node_peer=*/true);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", *creds, &port_);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // A peer as an agent makes one (agent/main.cc): the fleet CA, this
  // client's certificate, and the name the source's certificate must carry.
  std::unique_ptr<PeerModelSource> Peer(const common::ClientTlsFiles& files,
                                        const std::string& expect_name = "node-a") {
    auto creds = common::MakeChannelCredentials(files);
    EXPECT_TRUE(creds.ok()) << creds.status();
    if (!creds.ok()) return nullptr;
    return std::make_unique<PeerModelSource>(absl::StrCat("127.0.0.1:", port_), *creds, expect_name,
                                             /*tls=*/true);
  }
  absl::StatusOr<FetchResult> FetchWith(PeerModelSource& peer) {
    ModelFetcher fetcher(tmp_.Join("b"));
    FetchOptions o;
    o.reserve_bytes = 0;
    return fetcher.Fetch(peer, "Tiny", o);
  }

  static testing::TempDir* dir_;
  testing::TempDir tmp_;
  std::unique_ptr<ModelTransferServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};
testing::TempDir* TransferTlsTest::dir_ = nullptr;

TEST_F(TransferTlsTest, ANodeOfTheFleetFetchesVerified) {
  auto peer = Peer({P("ca.crt"), P("nodes/node-b.crt"), P("nodes/node-b.key")});
  ASSERT_NE(peer, nullptr);
  auto r = FetchWith(*peer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->weights.verdict(), dcufleet::v1::WEIGHTS_CLEAN);
  for (const auto& e : fs::directory_iterator(tmp_.Join("a/Tiny"))) {
    EXPECT_EQ(testing::ReadFileOrEmpty(tmp_.Join("b/Tiny/") + e.path().filename().string()),
              testing::ReadFileOrEmpty(e.path().string()))
        << e.path();
  }
}

TEST_F(TransferTlsTest, AUserCertificateOfTheFleetIsNotANodes) {
  auto peer = Peer({P("ca.crt"), P("users/alice.crt"), P("users/alice.key")});
  ASSERT_NE(peer, nullptr);
  auto r = FetchWith(*peer);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("not a node's (O=node)"));
  EXPECT_FALSE(fs::exists(tmp_.Join("b/Tiny")));
}

TEST_F(TransferTlsTest, NoClientCertificateOrAnotherFleetsIsRefusedAtTheHandshake) {
  for (const common::ClientTlsFiles& files :
       {common::ClientTlsFiles{P("ca.crt"), "", ""},
        common::ClientTlsFiles{P("ca.crt"), Other("nodes/node-b.crt"), Other("nodes/node-b.key")}}) {
    auto peer = Peer(files);
    ASSERT_NE(peer, nullptr);
    auto r = FetchWith(*peer);
    ASSERT_FALSE(r.ok()) << files.cert;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << files.cert << ": " << r.status();
  }
  EXPECT_FALSE(fs::exists(tmp_.Join("b/Tiny")));
}

// The source must be the node the controller named: a certificate of the
// fleet for another node is not good enough (no copy from an impostor).
TEST_F(TransferTlsTest, ASourceThatIsNotTheNodeAskedForIsRefused) {
  auto peer = Peer({P("ca.crt"), P("nodes/node-b.crt"), P("nodes/node-b.key")}, "node-c");
  ASSERT_NE(peer, nullptr);
  auto r = FetchWith(*peer);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  // A client that trusts another fleet's CA does not accept node-a either.
  auto stranger = Peer({Other("ca.crt"), Other("nodes/node-b.crt"), Other("nodes/node-b.key")});
  ASSERT_NE(stranger, nullptr);
  EXPECT_FALSE(FetchWith(*stranger).ok());
  EXPECT_FALSE(fs::exists(tmp_.Join("b/Tiny")));
}

// A source still on a node certificate as `dcuctl pki` made them before
// 2026-12-06 (clientAuth only): the copy fails at the handshake, and the
// error says what to check and what to do.
TEST_F(TransferTlsTest, ASourceOnAnOldClientOnlyCertificateIsExplained) {
  const std::string old = dir_->Join("old-node-a");
  {
    std::ofstream ext(old + ".ext");
    ext << "basicConstraints = critical,CA:FALSE\nextendedKeyUsage = clientAuth\n";
  }
  testing::OpenSsl({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                    old + ".key"});
  testing::OpenSsl({"req", "-new", "-key", old + ".key", "-subj", "/CN=node-a/O=node", "-out",
                    old + ".csr"});
  testing::OpenSsl({"x509", "-req", "-in", old + ".csr", "-CA", P("ca.crt"), "-CAkey", P("ca.key"),
                    "-set_serial", "78", "-days", "30", "-extfile", old + ".ext", "-out",
                    old + ".crt"});
  Serve(old + ".crt", old + ".key");
  auto peer = Peer({P("ca.crt"), P("nodes/node-b.crt"), P("nodes/node-b.key")});
  ASSERT_NE(peer, nullptr);
  auto r = FetchWith(*peer);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("certificate verify failed"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("must name node 'node-a'"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("issue the source's again"));
}

TEST(TransferTlsFiles, AMissingOrMismatchedFileNamesTheFlag) {
  testing::TempDir dir;
  testing::MakeStandardPki(dir.Join("pki"));
  auto missing = MakeTransferServerCredentials({dir.Join("pki/nodes/node-a.crt"), "", dir.Join("pki/ca.crt")});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("--tls-key"));
  auto mismatched = MakeTransferServerCredentials(
      {dir.Join("pki/nodes/node-a.crt"), dir.Join("pki/nodes/node-b.key"), dir.Join("pki/ca.crt")});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument) << mismatched.status();
}

}  // namespace
}  // namespace dcu::agent
