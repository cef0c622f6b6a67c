// common/tls_config: PEM files are checked before gRPC sees them.
#include "common/tls_config.h"

#include <sys/stat.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"
#include "tests/unit/security/security_test_util.h"

namespace dcu::common {
namespace {

using ::testing::HasSubstr;

class TlsConfigTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    pki_ = dir_->Join("pki");
    testing::MakeStandardPki(pki_);
    other_ = dir_->Join("other");
    testing::Pki({"init", other_});
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string P(const std::string& rel) { return pki_ + "/" + rel; }
  static testing::TempDir* dir_;
  static std::string pki_, other_;
};
testing::TempDir* TlsConfigTest::dir_ = nullptr;
std::string TlsConfigTest::pki_;
std::string TlsConfigTest::other_;

TEST_F(TlsConfigTest, ReadsWhatPkiMakes) {
  auto cert = ReadCertificatePem(P("nodes/node-a.crt"), "--tls-cert");
  ASSERT_TRUE(cert.ok()) << cert.status();
  auto info = InspectCertificate(*cert);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->common_name, "node-a");
  EXPECT_EQ(info->organization, "node");
  EXPECT_GT(info->not_after, absl::Now() + absl::Hours(24 * 300));
  auto key = ReadPrivateKeyPem(P("nodes/node-a.key"), "--tls-key");
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_TRUE(CheckKeyMatchesCertificate(*cert, *key, "c", "k").ok());
  auto creds = MakeChannelCredentials({P("ca.crt"), P("nodes/node-a.crt"), P("nodes/node-a.key")});
  EXPECT_TRUE(creds.ok()) << creds.status();
  auto server = MakeServerCredentials({P("controller.crt"), P("controller.key"), P("ca.crt")});
  EXPECT_TRUE(server.ok()) << server.status();
}

TEST_F(TlsConfigTest, RefusesKeyReadableByOthersNamingTheFile) {
  std::string key = dir_->Join("loose.key");
  std::ifstream in(P("users/alice.key"));
  std::ofstream(key) << in.rdbuf();
  for (mode_t mode : {0644, 0640, 0604, 0660}) {
    chmod(key.c_str(), mode);
    auto r = ReadPrivateKeyPem(key, "--tls-key");
    ASSERT_FALSE(r.ok()) << std::oct << mode;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(r.status().message(), HasSubstr(key));
    EXPECT_THAT(r.status().message(), HasSubstr("chmod 600"));
  }
  chmod(key.c_str(), 0600);
  EXPECT_TRUE(ReadPrivateKeyPem(key, "--tls-key").ok());
  // The same check guards the server and the client credentials.
  chmod(key.c_str(), 0644);
  auto c = MakeChannelCredentials({P("ca.crt"), P("users/alice.crt"), key});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(TlsConfigTest, RefusesExpiredCertificate) {
  testing::MakeExpiredNodeCert(pki_, "node-x", dir_->Join("expired"));
  auto r = ReadCertificatePem(dir_->Join("expired.crt"), "--tls-cert");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("expired on"));
  EXPECT_THAT(r.status().message(), HasSubstr("node-x"));
}

TEST_F(TlsConfigTest, RefusesMismatchedKeyAndGarbage) {
  auto cert = ReadCertificatePem(P("nodes/node-a.crt"), "--tls-cert");
  auto key = ReadPrivateKeyPem(P("nodes/node-b.key"), "--tls-key");
  ASSERT_TRUE(cert.ok() && key.ok());
  absl::Status s = CheckKeyMatchesCertificate(*cert, *key, "a.crt", "b.key");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'b.key' does not belong to certificate 'a.crt'"));
  auto c = MakeChannelCredentials({P("ca.crt"), P("nodes/node-a.crt"), P("nodes/node-b.key")});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);

  std::string junk = dir_->Join("junk.crt");
  std::ofstream(junk) << "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  EXPECT_EQ(ReadCertificatePem(junk, "--tls-ca").status().code(), absl::StatusCode::kInvalidArgument);
  std::ofstream(dir_->Join("empty.crt")) << "hello\n";
  auto e = ReadCertificatePem(dir_->Join("empty.crt"), "--tls-ca");
  EXPECT_THAT(e.status().message(), HasSubstr("not a PEM file"));
  EXPECT_EQ(ReadCertificatePem(dir_->Join("missing.crt"), "--tls-ca").status().code(),
            absl::StatusCode::kNotFound);
  // A half-configured client is a usage error, not a silent plaintext.
  EXPECT_EQ(MakeChannelCredentials({"", P("users/alice.crt"), P("users/alice.key")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeChannelCredentials({P("ca.crt"), P("users/alice.crt"), ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeServerCredentials({P("controller.crt"), "", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TlsConfigTest, TokenFileRules) {
  std::string path = dir_->Join("token");
  auto write = [&](const std::string& text, mode_t mode) {
    unlink(path.c_str());
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
  };
  write("0123456789abcdef0123456789abcdef\n", 0600);
  auto t = ReadTokenFile(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "0123456789abcdef0123456789abcdef");
  write("0123456789abcdef0123456789abcdef\n", 0644);
  EXPECT_EQ(ReadTokenFile(path).status().code(), absl::StatusCode::kFailedPrecondition);
  write("short", 0600);
  EXPECT_EQ(ReadTokenFile(path).status().code(), absl::StatusCode::kInvalidArgument);
  write("0123456789abcdef secret-with-space-0123456789", 0600);
  auto s = ReadTokenFile(path);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  // The message never repeats the token.
  EXPECT_THAT(s.status().message(), ::testing::Not(HasSubstr("secret")));
  write(std::string(5000, 'a'), 0600);
  EXPECT_EQ(ReadTokenFile(path).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dcu::common
