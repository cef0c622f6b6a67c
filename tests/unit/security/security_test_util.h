#pragma once

// Test PKIs made the way a person makes them: `dcuctl pki` (RunPki, which
// runs the real openssl CLI), plus openssl directly for what dcuctl refuses
// to make (expired certificates).

#include <sys/stat.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/process_runner.h"
#include "dcuctl/pki_commands.h"
#include "gtest/gtest.h"

namespace dcu::testing {

inline int Pki(std::vector<std::string> words, std::string* output = nullptr) {
  dcuctl::PkiArgs a;
  a.action = words.at(0);
  a.dir = words.at(1);
  if (words.size() > 2) a.name = words[2];
  if (words.size() > 3) a.role = words[3];
  common::SubprocessRunner runner;
  std::ostringstream out, err;
  int rc = dcuctl::RunPki(a, runner, out, err);
  if (output) *output = out.str() + err.str();
  EXPECT_EQ(rc, 0) << out.str() << err.str();
  return rc;
}

// ca, controller, node-a, node-b, alice (admin), bob (read-only),
// tokens carol (read-only) and dave (admin).
inline void MakeStandardPki(const std::string& dir) {
  Pki({"init", dir});
  Pki({"issue-node", dir, "node-a"});
  Pki({"issue-node", dir, "node-b"});
  Pki({"issue-user", dir, "alice", "admin"});
  Pki({"issue-user", dir, "bob", "read-only"});
  Pki({"token", dir, "carol", "read-only"});
  Pki({"token", dir, "dave", "admin"});
}

inline common::ProcessOutput OpenSsl(std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  common::SubprocessRunner runner;
  auto r = runner.Run(args, {});
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_EQ(r->exit_code, 0) << r->stderr_data;
  return *r;
}

// A node certificate signed by `dir`'s CA whose notAfter is a day before
// its notBefore: OpenSSL 3.0's `x509 -req -days -1` writes exactly that, so
// it is expired from the moment it exists (no faketime needed).
inline void MakeExpiredNodeCert(const std::string& dir, const std::string& name,
                                const std::string& out_prefix) {
  std::string key = out_prefix + ".key", csr = out_prefix + ".csr", crt = out_prefix + ".crt";
  OpenSsl({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key});
  chmod(key.c_str(), 0600);
  OpenSsl({"req", "-new", "-key", key, "-subj", absl::StrCat("/CN=", name, "/O=node"), "-out", csr});
  OpenSsl({"x509", "-req", "-in", csr, "-CA", dir + "/ca.crt", "-CAkey", dir + "/ca.key",
           "-set_serial", "77", "-days", "-1", "-out", crt});
}

}  // namespace dcu::testing
