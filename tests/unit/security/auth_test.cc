// controller/service/auth: identities, the tokens file and the method policy.
#include "controller/service/auth.h"

#include <sys/stat.h>

#include <fstream>

#include "common/hash.h"
#include "common/tls_config.h"
#include "dcufleet/v1/fleet.grpc.pb.h"
#include "dcufleet/v1/node.grpc.pb.h"
#include "absl/strings/match.h"
#include "google/protobuf/descriptor.h"
#include "dcufleet/v1/fleet.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"

namespace dcu::controller {
namespace {

using ::testing::HasSubstr;

const std::string kReadToken = "read-only-token-0123456789abcdef";
const std::string kAdminToken = "admin-token-0123456789abcdef0123";

std::shared_ptr<TokenTable> Tokens() {
  auto t = TokenTable::Parse(absl::StrCat("# people\n", common::Sha256Hex(kReadToken), " read-only carol\n\n",
                                          common::Sha256Hex(kAdminToken), "\tadmin   dave\n"),
                             "tokens.txt");
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<TokenTable>(*t);
}

std::vector<std::string> FleetMethods() {
  std::vector<std::string> out;
  // Through a message of fleet.proto: the reference links fleet.pb.o, which
  // registers the file (and its services) in the generated pool.
  const auto* svc = dcufleet::v1::ListNodesRequest::descriptor()->file()->FindServiceByName("FleetService");
  if (svc == nullptr) {
    ADD_FAILURE() << "dcufleet.v1.FleetService is not in fleet.proto's descriptor";
    return out;
  }
  for (int i = 0; i < svc->method_count(); ++i) {
    out.push_back(absl::StrCat("/", svc->full_name(), "/", svc->method(i)->name()));
  }
  return out;
}

bool IsRead(const std::string& path) {
  std::string m = path.substr(path.rfind('/') + 1);
  return absl::StartsWith(m, "Get") || absl::StartsWith(m, "List") || absl::StartsWith(m, "Watch");
}

TEST(TokenTableTest, ParsesAndFindsByHashOnly) {
  auto t = Tokens();
  ASSERT_EQ(t->size(), 2u);
  const TokenEntry* e = t->Find(kReadToken);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, "carol");
  EXPECT_EQ(e->role, Role::kReadOnly);
  EXPECT_EQ(t->Find(kAdminToken)->role, Role::kAdmin);
  EXPECT_EQ(t->Find("wrong"), nullptr);
  // The hash itself is not a token.
  EXPECT_EQ(t->Find(common::Sha256Hex(kAdminToken)), nullptr);
}

TEST(TokenTableTest, BadLinesNameFileAndLine) {
  std::string h = common::Sha256Hex("x");
  struct Case {
    std::string text;
    std::string want;
  } cases[] = {
      {"abc admin dave\n", "tokens.txt:1"},
      {absl::StrCat("\n", h, " root dave\n"), "tokens.txt:2"},
      {absl::StrCat(h, " node gpu-01\n"), "nodes authenticate with certificates"},
      {absl::StrCat(h, " admin\n"), "expected 'sha256hex role name'"},
      {absl::StrCat(h, " admin Dave;rm\n"), "tokens.txt:1"},
      {absl::StrCat(h, " admin a\n", h, " admin b\n"), "tokens.txt:2: this token hash is listed twice"},
      {absl::StrCat(h, " admin a\n", common::Sha256Hex("y"), " read-only a\n"), "name 'a' is listed twice"},
  };
  for (const auto& c : cases) {
    auto t = TokenTable::Parse(c.text, "tokens.txt");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr(c.want)) << c.text;
  }
}

TEST(TokenTableTest, FileWritableByOthersIsRefused) {
  testing::TempDir dir;
  std::string path = dir.Join("tokens.txt");
  std::ofstream(path) << common::Sha256Hex(kAdminToken) << " admin dave\n";
  chmod(path.c_str(), 0666);
  auto t = TokenTable::LoadFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(t.status().message(), HasSubstr(path));
  chmod(path.c_str(), 0644);  // readable is fine: it holds hashes only
  EXPECT_TRUE(TokenTable::LoadFile(path).ok());
}

TEST(IdentityTest, FromCertificateSubject) {
  auto n = IdentityFromCertificate("O=node,CN=gpu-01", "gpu-01");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->role, Role::kNode);
  EXPECT_EQ(n->name, "gpu-01");
  EXPECT_EQ(n->via, "certificate");
  EXPECT_EQ(IdentityFromCertificate("CN=alice,O=admin", "alice")->role, Role::kAdmin);
  EXPECT_EQ(IdentityFromCertificate("O=read-only,CN=bob", "bob")->role, Role::kReadOnly);
  // No role, an unknown role, a role smuggled into another attribute, a bad CN.
  EXPECT_EQ(IdentityFromCertificate("CN=x", "x").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(IdentityFromCertificate("O=root,CN=x", "x").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(IdentityFromCertificate("OU=O\\=admin,CN=x", "x").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(IdentityFromCertificate("O=admin,CN=Bad Name", "Bad Name").status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(PolicyTest, EveryFleetMethodByRole) {
  Identity admin{Role::kAdmin, "alice", "certificate"};
  Identity reader{Role::kReadOnly, "bob", "token"};
  Identity node{Role::kNode, "gpu-01", "certificate"};
  std::vector<std::string> methods = FleetMethods();
  ASSERT_GE(methods.size(), 10u);
  int reads = 0;
  for (const auto& m : methods) {
    EXPECT_TRUE(AuthorizeMethod(admin, m).ok()) << m;
    absl::Status r = AuthorizeMethod(reader, m);
    if (IsRead(m)) {
      ++reads;
      EXPECT_TRUE(r.ok()) << m;
    } else {
      EXPECT_EQ(r.code(), absl::StatusCode::kPermissionDenied) << m;
      EXPECT_THAT(r.message(), HasSubstr("admin role"));
    }
    EXPECT_EQ(AuthorizeMethod(node, m).code(), absl::StatusCode::kPermissionDenied) << m;
  }
  EXPECT_GE(reads, 5);
  EXPECT_TRUE(AuthorizeMethod(node, "/dcufleet.v1.NodeService/Connect").ok());
  EXPECT_EQ(AuthorizeMethod(admin, "/dcufleet.v1.NodeService/Connect").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(AuthorizeMethod(reader, "/grpc.health.v1.Health/Check").ok());
  EXPECT_TRUE(AuthorizeMethod(reader, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo").ok());
  EXPECT_EQ(AuthorizeMethod(node, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo").code(),
            absl::StatusCode::kPermissionDenied);
  // Default deny: an unknown service, even for admin.
  EXPECT_EQ(AuthorizeMethod(admin, "/evil.Service/Run").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(AuthorizeMethod(admin, "").code(), absl::StatusCode::kPermissionDenied);
}

TEST(PolicyTest, PoolServiceIsReadOnlyForReaders) {
  Identity admin{Role::kAdmin, "a", "token"};
  Identity reader{Role::kReadOnly, "r", "token"};
  Identity node{Role::kNode, "n1", "certificate"};
  EXPECT_TRUE(AuthorizeMethod(admin, "/dcufleet.v1.PoolService/ListPools").ok());
  EXPECT_TRUE(AuthorizeMethod(reader, "/dcufleet.v1.PoolService/ListPools").ok());
  EXPECT_EQ(AuthorizeMethod(node, "/dcufleet.v1.PoolService/ListPools").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(AuthorizeMethod(admin, "/dcufleet.v1.PoolService/CancelJob").code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(ProcessorTest, DecidesFromTokenOrCertificate) {
  AuthProcessor p(Tokens());
  const std::string deploy = "/dcufleet.v1.FleetService/Deploy";
  const std::string list = "/dcufleet.v1.FleetService/ListNodes";
  // Nothing at all.
  auto none = p.Decide(list, "", "", "");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(none.status().message(), HasSubstr("--token-file"));
  // Health needs nothing.
  EXPECT_TRUE(p.Decide("/grpc.health.v1.Health/Check", "", "", "").ok());
  // Tokens.
  EXPECT_TRUE(p.Decide(list, "Bearer " + kReadToken, "", "").ok());
  auto denied = p.Decide(deploy, "Bearer " + kReadToken, "", "");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(denied.status().message(), HasSubstr("read-only 'carol'"));
  EXPECT_EQ(p.Decide(deploy, "Bearer " + kAdminToken, "", "")->name, "dave");
  auto wrong = p.Decide(list, "Bearer not-a-known-token-123456", "", "");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(wrong.status().message(), ::testing::Not(HasSubstr("not-a-known")));
  EXPECT_EQ(p.Decide(list, "Basic abc", "", "").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(p.Decide(list, "Bearer ", "", "").status().code(), absl::StatusCode::kUnauthenticated);
  // Certificates; a token, when present, names the caller.
  EXPECT_EQ(p.Decide(deploy, "", "O=admin,CN=alice", "alice")->name, "alice");
  EXPECT_EQ(p.Decide(deploy, "", "O=read-only,CN=bob", "bob").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(p.Decide(deploy, "Bearer " + kReadToken, "O=admin,CN=alice", "alice").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(p.Decide("/dcufleet.v1.NodeService/Connect", "", "O=node,CN=gpu-01", "gpu-01").ok());
  // No tokens file: every token is unknown.
  AuthProcessor bare(nullptr);
  EXPECT_EQ(bare.Decide(list, "Bearer " + kAdminToken, "", "").status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(NodeNameTest, NodeSpeaksOnlyForItself) {
  Identity node{Role::kNode, "gpu-01", "certificate"};
  EXPECT_TRUE(CheckNodeName(node, "hello.node_name", "gpu-01").ok());
  absl::Status s = CheckNodeName(node, "hello.node_name", "gpu-02");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("'gpu-01' may not speak for node 'gpu-02'"));
  EXPECT_EQ(CheckNodeName({Role::kAdmin, "alice", "certificate"}, "f", "alice").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckNodeName({Role::kAdmin, "", "insecure"}, "f", "anything").ok());
}

}  // namespace
}  // namespace dcu::controller
