// dcuctl pki: real openssl, real files, the modes and subjects the
// controller and agents rely on.
#include "dcuctl/pki_commands.h"

#include <sys/stat.h>

#include <filesystem>
#include <sstream>

#include "absl/strings/strip.h"
#include "common/hash.h"
#include "common/tls_config.h"
#include "dcuctl/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"
#include "tests/unit/security/security_test_util.h"

namespace dcu::dcuctl {
namespace {

using ::testing::HasSubstr;

mode_t Mode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

int RunPkiCmd(PkiArgs a, std::string* err = nullptr) {
  common::SubprocessRunner runner;
  std::ostringstream out, e;
  int rc = RunPki(a, runner, out, e);
  if (err) *err = e.str();
  return rc;
}

TEST(PkiTest, MakesAFleetPkiWithPrivateKeys) {
  testing::TempDir dir;
  std::string pki = dir.Join("deep/pki");
  testing::MakeStandardPki(pki);
  EXPECT_EQ(Mode(pki), 0700u);
  for (const char* key : {"ca.key", "controller.key", "nodes/node-a.key", "users/alice.key",
                          "users/bob.key", "tokens/carol.token", "tokens/dave.token", "tokens.txt"}) {
    EXPECT_EQ(Mode(pki + "/" + key), 0600u) << key;
  }
  struct Want {
    const char* file;
    const char* cn;
    const char* org;
  } wants[] = {{"nodes/node-a.crt", "node-a", "node"},
               {"users/alice.crt", "alice", "admin"},
               {"users/bob.crt", "bob", "read-only"},
               {"controller.crt", "dcu-controller", "dcufleet"}};
  for (const auto& w : wants) {
    auto pem = common::ReadCertificatePem(pki + "/" + w.file, "cert");
    ASSERT_TRUE(pem.ok()) << pem.status();
    auto info = common::InspectCertificate(*pem);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->common_name, w.cn);
    EXPECT_EQ(info->organization, w.org);
    // Signed by the CA: openssl verify agrees.
    auto v = testing::OpenSsl({"verify", "-CAfile", pki + "/ca.crt", pki + "/" + w.file});
    EXPECT_THAT(v.stdout_data, HasSubstr(": OK"));
  }
  auto text = testing::OpenSsl({"x509", "-in", pki + "/controller.crt", "-noout", "-ext", "subjectAltName"});
  EXPECT_THAT(text.stdout_data, HasSubstr("IP Address:127.0.0.1"));
  EXPECT_THAT(text.stdout_data, HasSubstr("DNS:localhost"));
  // The tokens file holds the hash of the token file's content, never the token.
  std::string token(absl::StripAsciiWhitespace(testing::ReadFileOrEmpty(pki + "/tokens/carol.token")));
  std::string table = testing::ReadFileOrEmpty(pki + "/tokens.txt");
  EXPECT_THAT(table, HasSubstr(common::Sha256Hex(token) + " read-only carol"));
  EXPECT_THAT(table, ::testing::Not(HasSubstr(token)));
  EXPECT_EQ(token.size(), 64u);
}

TEST(PkiTest, NeverOverwrites) {
  testing::TempDir dir;
  std::string pki = dir.Join("pki");
  testing::Pki({"init", pki});
  std::string ca_before = testing::ReadFileOrEmpty(pki + "/ca.crt");
  std::string err;
  EXPECT_EQ(RunPkiCmd({"init", pki}, &err), kExitFailed);
  EXPECT_THAT(err, HasSubstr("already holds a CA"));
  EXPECT_EQ(testing::ReadFileOrEmpty(pki + "/ca.crt"), ca_before);
  testing::Pki({"issue-node", pki, "gpu-01"});
  std::string key_before = testing::ReadFileOrEmpty(pki + "/nodes/gpu-01.key");
  EXPECT_EQ(RunPkiCmd({"issue-node", pki, "gpu-01"}, &err), kExitFailed);
  EXPECT_THAT(err, HasSubstr("already exists"));
  EXPECT_EQ(testing::ReadFileOrEmpty(pki + "/nodes/gpu-01.key"), key_before);
}

TEST(PkiTest, RefusesHostileNamesWithoutRunningAnything) {
  testing::TempDir dir;
  std::string pki = dir.Join("pki");
  testing::Pki({"init", pki});
  std::string marker = dir.Join("pwned");
  for (const std::string& name : std::vector<std::string>{std::string("x; touch ") + marker, "$(touch " + marker + ")", "`touch " + marker + "`",
        "../../escape", "a/b", "-subj", std::string(1 << 20, 'a'), "CN=x/O=admin"}) {
    std::string err;
    EXPECT_EQ(RunPkiCmd({"issue-node", pki, name}, &err), kExitUsage) << name.substr(0, 40);
    EXPECT_LT(err.size(), 300u);
  }
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_FALSE(std::filesystem::exists(dir.Join("escape.crt")));
  std::string err;
  EXPECT_EQ(RunPkiCmd({"issue-user", pki, "eve", "root"}, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--role"));
  PkiArgs hostile_host{"init", dir.Join("pki2"), "", "", {"evil\nDNS:x"}};
  EXPECT_EQ(RunPkiCmd(hostile_host, &err), kExitUsage);
}

TEST(PkiTest, IssueWithoutCaSaysWhatToDo) {
  testing::TempDir dir;
  std::string err;
  EXPECT_EQ(RunPkiCmd({"issue-node", dir.Join("none"), "gpu-01"}, &err), kExitFailed);
  EXPECT_THAT(err, HasSubstr("pki init"));
}

TEST(PkiTest, MissingOpensslIsAClearError) {
  testing::TempDir dir;
  PkiArgs a{"init", dir.Join("pki")};
  a.openssl = "/nonexistent/openssl";
  std::string err;
  EXPECT_EQ(RunPkiCmd(a, &err), kExitFailed);
  EXPECT_THAT(err, HasSubstr("install the openssl package"));
  // The half-made key is removed.
  EXPECT_FALSE(std::filesystem::exists(dir.Join("pki/ca.key")));
}

}  // namespace
}  // namespace dcu::dcuctl
