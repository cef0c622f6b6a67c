#include "dcuctl/pki_commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs_util.h"
#include "common/hash.h"
#include "common/ids.h"
#include "common/status_util.h"
#include "common/tls_config.h"
#include "dcuctl/exit_codes.h"

namespace dcu::dcuctl {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return common::ErrnoToStatus(errno, what, path);
}

// Makes `dir` (and parents) if missing; new directories are 0700.
absl::Status MakeDirs(const std::string& dir) {
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      cur = dir.substr(0, i);
      if (mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) return Errno("creating directory", cur);
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("'", dir, "' is not a directory"));
  }
  return absl::OkStatus();
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Creates `path` new (never following or replacing anything) with `mode`
// and writes `data`. ALREADY_EXISTS when it exists.
absl::Status CreateFile(const std::string& path, absl::string_view data, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat("'", path, "' already exists; not overwriting it"));
    }
    return Errno("creating", path);
  }
  fchmod(fd, mode);  // the umask must not widen or narrow what we mean
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = Errno("writing", path);
      close(fd);
      return s;
    }
    off += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return Errno("closing", path);
  return absl::OkStatus();
}

absl::Status AppendLine(const std::string& path, const std::string& line, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return Errno("opening", path);
  std::string data = line + "\n";
  ssize_t n = write(fd, data.data(), data.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    errno = err;
    return Errno("appending to", path);
  }
  return absl::OkStatus();
}

class OpenSsl {
 public:
  OpenSsl(common::ProcessRunner& runner, std::string program) : runner_(runner), program_(std::move(program)) {}

  absl::Status Run(std::vector<std::string> args, absl::string_view what) {
    args.insert(args.begin(), program_);
    common::ProcessOptions opts;
    opts.timeout = absl::Seconds(60);
    auto out = runner_.Run(args, opts);
    if (!out.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": cannot run '", program_, "' (", out.status().message(),
          "); install the openssl package"));
    }
    if (out->exit_code != 0) {
      return absl::InternalError(absl::StrCat(what, ": openssl exited with ", out->exit_code, ": ",
                                              absl::StripAsciiWhitespace(out->stderr_data)));
    }
    return absl::OkStatus();
  }

 private:
  common::ProcessRunner& runner_;
  std::string program_;
};

// A P-256 key written 0600 to a file that did not exist.
absl::Status NewKey(OpenSsl& ssl, const std::string& path) {
  // Created first, empty and 0600, so the key never exists with a wider mode.
  DCU_RETURN_IF_ERROR(CreateFile(path, "", 0600));
  absl::Status s = ssl.Run({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-out", path},
                           absl::StrCat("generating key '", path, "'"));
  if (!s.ok()) unlink(path.c_str());
  chmod(path.c_str(), 0600);
  return s;
}

// Temporary file names and certificate serials: common::RandomHex, the one
// generator (the token below, a secret, takes its error instead).
std::string RandomHex(size_t bytes) {
  auto r = common::RandomHex(bytes);
  return r.ok() ? *std::move(r) : std::string(bytes * 2, '0');
}

// Temporary files next to the outputs, removed whatever happens.
class TempFiles {
 public:
  explicit TempFiles(std::string dir) : dir_(std::move(dir)) {}
  ~TempFiles() {
    for (const auto& p : paths_) unlink(p.c_str());
  }
  absl::StatusOr<std::string> Write(absl::string_view suffix, absl::string_view data) {
    std::string path = absl::StrCat(dir_, "/.pki-", RandomHex(6), suffix);
    DCU_RETURN_IF_ERROR(CreateFile(path, data, 0600));
    paths_.push_back(path);
    return path;
  }
  std::string Name(absl::string_view suffix) {
    std::string path = absl::StrCat(dir_, "/.pki-", RandomHex(6), suffix);
    paths_.push_back(path);
    return path;
  }

 private:
  std::string dir_;
  std::vector<std::string> paths_;
};

struct Leaf {
  std::string cn;
  std::string org;
  std::vector<std::string> san;  // "DNS:x" / "IP:y"
  // What the certificate may authenticate: the controller serves, a user
  // is a client, a node is both (a client of the controller, and the server
  // of its model copies to other nodes).
  enum class Usage { kServer, kClient, kServerAndClient } usage = Usage::kClient;
  int days = 365;
  std::string key_path;
  std::string cert_path;
};

absl::Status IssueLeaf(OpenSsl& ssl, const std::string& dir, const Leaf& leaf) {
  std::string ca_key = dir + "/ca.key";
  std::string ca_crt = dir + "/ca.crt";
  if (!Exists(ca_key) || !Exists(ca_crt)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CA in '", dir, "' (ca.crt, ca.key); run 'dcuctl pki init ", dir, "' first"));
  }
  DCU_RETURN_IF_ERROR(common::CheckSecretFileMode(ca_key, "CA key"));
  if (Exists(leaf.cert_path)) {
    return absl::AlreadyExistsError(absl::StrCat("'", leaf.cert_path, "' already exists; not overwriting it"));
  }
  DCU_RETURN_IF_ERROR(NewKey(ssl, leaf.key_path));
  TempFiles tmp(dir);
  // Names are validated (a-z0-9._-), so they cannot break the config syntax.
  DCU_ASSIGN_OR_RETURN(std::string req_cnf,
                       tmp.Write(".req.cnf", absl::StrCat("[req]\ndistinguished_name = dn\nprompt = no\n"
                                                          "[dn]\nCN = ",
                                                          leaf.cn, "\nO = ", leaf.org, "\n")));
  std::string ext = absl::StrCat(
      "[v3]\nbasicConstraints = critical,CA:FALSE\n"
      "keyUsage = critical,digitalSignature,keyEncipherment\n"
      "extendedKeyUsage = ",
      leaf.usage == Leaf::Usage::kServer   ? "serverAuth"
      : leaf.usage == Leaf::Usage::kClient ? "clientAuth"
                                           : "serverAuth,clientAuth",
      "\nsubjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n",
      leaf.san.empty() ? "" : absl::StrCat("subjectAltName = ", absl::StrJoin(leaf.san, ","), "\n"));
  DCU_ASSIGN_OR_RETURN(std::string ext_cnf, tmp.Write(".ext.cnf", ext));
  std::string csr = tmp.Name(".csr");
  absl::Status s = ssl.Run({"req", "-new", "-config", req_cnf, "-key", leaf.key_path, "-out", csr},
                           absl::StrCat("certificate request for '", leaf.cn, "'"));
  if (s.ok()) {
    s = ssl.Run({"x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-set_serial",
                 absl::StrCat("0x", RandomHex(16)), "-days", absl::StrCat(leaf.days), "-sha256",
                 "-extfile", ext_cnf, "-extensions", "v3", "-out", leaf.cert_path},
                absl::StrCat("signing the certificate of '", leaf.cn, "'"));
  }
  if (!s.ok()) {
    unlink(leaf.key_path.c_str());
    unlink(leaf.cert_path.c_str());
    return s;
  }
  chmod(leaf.cert_path.c_str(), 0644);
  return absl::OkStatus();
}

bool IsIpLiteral(absl::string_view h) {
  if (h.find(':') != absl::string_view::npos) return true;
  for (char c : h) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return !h.empty();
}

absl::Status CheckHost(absl::string_view h) {
  if (h.empty() || h.size() > 253) return absl::InvalidArgumentError("--host must be 1-253 characters");
  for (char c : h) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat("--host '", absl::CHexEscape(h), "' may hold only letters, digits, '.', '-' and ':'"));
    }
  }
  return absl::OkStatus();
}

absl::Status Init(OpenSsl& ssl, const PkiArgs& a, std::ostream& out) {
  for (const auto& h : a.hosts) DCU_RETURN_IF_ERROR(CheckHost(h));
  DCU_RETURN_IF_ERROR(MakeDirs(a.dir));
  std::string ca_key = a.dir + "/ca.key", ca_crt = a.dir + "/ca.crt";
  if (Exists(ca_key) || Exists(ca_crt)) {
    return absl::AlreadyExistsError(absl::StrCat("'", a.dir, "' already holds a CA; not overwriting it"));
  }
  DCU_RETURN_IF_ERROR(NewKey(ssl, ca_key));
  TempFiles tmp(a.dir);
  DCU_ASSIGN_OR_RETURN(
      std::string cnf,
      tmp.Write(".ca.cnf",
                "[req]\ndistinguished_name = dn\nprompt = no\nx509_extensions = v3_ca\n"
                "[dn]\nCN = dcufleet-ca\nO = dcufleet\n"
                "[v3_ca]\nbasicConstraints = critical,CA:TRUE,pathlen:0\n"
                "keyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n"));
  absl::Status s = ssl.Run({"req", "-new", "-x509", "-config", cnf, "-key", ca_key, "-sha256", "-days",
                            absl::StrCat(a.days > 0 ? a.days : 3650), "-out", ca_crt},
                           "creating the CA certificate");
  if (!s.ok()) {
    unlink(ca_key.c_str());
    return s;
  }
  chmod(ca_crt.c_str(), 0644);
  Leaf leaf;
  leaf.cn = "dcu-controller";
  leaf.org = "dcufleet";
  leaf.usage = Leaf::Usage::kServer;
  leaf.days = a.days > 0 ? a.days : 825;
  leaf.key_path = a.dir + "/controller.key";
  leaf.cert_path = a.dir + "/controller.crt";
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
  char hostname[256] = {0};
  if (gethostname(hostname, sizeof(hostname) - 1) == 0 && CheckHost(hostname).ok()) hosts.push_back(hostname);
  hosts.insert(hosts.end(), a.hosts.begin(), a.hosts.end());
  for (const auto& h : hosts) {
    std::string san = absl::StrCat(IsIpLiteral(h) ? "IP:" : "DNS:", h);
    if (std::find(leaf.san.begin(), leaf.san.end(), san) == leaf.san.end()) leaf.san.push_back(san);
  }
  DCU_RETURN_IF_ERROR(IssueLeaf(ssl, a.dir, leaf));
  out << "CA:          " << ca_crt << " (key " << ca_key << ", keep it offline)\n"
      << "controller:  " << leaf.cert_path << " (key " << leaf.key_path << ") for "
      << absl::StrJoin(hosts, ", ") << "\n"
      << "next: dcuctl pki issue node NAME --dir " << a.dir << "; dcuctl pki issue user NAME --role "
      << "admin --dir " << a.dir << "\n";
  return absl::OkStatus();
}

absl::Status Issue(OpenSsl& ssl, const PkiArgs& a, std::ostream& out) {
  bool node = a.action == "issue-node";
  std::string sub = node ? "nodes" : "users";
  DCU_RETURN_IF_ERROR(MakeDirs(absl::StrCat(a.dir, "/", sub)));
  Leaf leaf;
  leaf.cn = a.name;
  leaf.org = node ? "node" : a.role;
  if (node) {
    // Another node's agent checks that the source of a model copy is the
    // node it asked for: by this name (PeerModelSource).
    leaf.usage = Leaf::Usage::kServerAndClient;
    leaf.san.push_back(absl::StrCat("DNS:", a.name));
  }
  leaf.days = a.days > 0 ? a.days : 365;
  leaf.key_path = absl::StrCat(a.dir, "/", sub, "/", a.name, ".key");
  leaf.cert_path = absl::StrCat(a.dir, "/", sub, "/", a.name, ".crt");
  DCU_RETURN_IF_ERROR(IssueLeaf(ssl, a.dir, leaf));
  out << (node ? "node" : a.role) << " '" << a.name << "': " << leaf.cert_path << " (key "
      << leaf.key_path << ", valid " << leaf.days << " days)\n";
  if (node) {
    out << "on the node: dcu-agent --node " << a.name << " --tls-ca ca.crt --tls-cert " << a.name
        << ".crt --tls-key " << a.name << ".key --controller HOST:PORT\n";
  }
  return absl::OkStatus();
}

absl::Status Token(const PkiArgs& a, std::ostream& out) {
  DCU_RETURN_IF_ERROR(MakeDirs(absl::StrCat(a.dir, "/tokens")));
  std::string token_path = absl::StrCat(a.dir, "/tokens/", a.name, ".token");
  DCU_ASSIGN_OR_RETURN(std::string token, common::RandomHex(32));
  DCU_RETURN_IF_ERROR(CreateFile(token_path, token + "\n", 0600));
  std::string line = absl::StrCat(common::Sha256Hex(token), " ", a.role, " ", a.name);
  std::string table = a.dir + "/tokens.txt";
  absl::Status s = AppendLine(table, line, 0600);
  if (!s.ok()) {
    unlink(token_path.c_str());
    return s;
  }
  // The line holds only the hash; the token itself is never printed.
  out << "token for " << a.role << " '" << a.name << "' written to " << token_path << "\n"
      << "added to " << table << " (restart the controller with --tokens-file " << table << "):\n"
      << line << "\n";
  return absl::OkStatus();
}

}  // namespace

int RunPki(const PkiArgs& a, common::ProcessRunner& runner, std::ostream& out, std::ostream& err) {
  if (a.dir.empty()) {
    err << "error: pki: a directory is needed\n";
    return kExitUsage;
  }
  if (a.action != "init") {
    std::string why = common::ValidateName("NAME", a.name);
    if (!why.empty()) {
      err << "error: pki: " << why << "\n";
      return kExitUsage;
    }
  }
  if ((a.action == "issue-user" || a.action == "token") && a.role != "admin" && a.role != "read-only") {
    err << "error: pki: --role must be admin or read-only\n";
    return kExitUsage;
  }
  if (a.days < 0 || a.days > 36500) {
    err << "error: pki: --days must be between 1 and 36500\n";
    return kExitUsage;
  }
  OpenSsl ssl(runner, a.openssl);
  absl::Status s;
  if (a.action == "init") {
    s = Init(ssl, a, out);
  } else if (a.action == "issue-node" || a.action == "issue-user") {
    s = Issue(ssl, a, out);
  } else if (a.action == "token") {
    s = Token(a, out);
  } else {
    err << "error: pki: unknown action '" << a.action << "'\n";
    return kExitUsage;
  }
  if (!s.ok()) {
    err << "error: pki " << a.action << ": " << s.message() << "\n";
    return s.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  return kExitOk;
}

std::unique_ptr<PkiCommands> PkiCommands::Add(CLI::App* app) {
  std::unique_ptr<PkiCommands> p(new PkiCommands());
  PkiArgs& a = p->args_;
  a.dir = "dcufleet-pki";
  auto* pki = app->add_subcommand("pki", "make the CA, certificates and tokens of a secure fleet "
                                         "(offline; see docs/security.md)")
                  ->require_subcommand(1);
  p->init_ = pki->add_subcommand("init", "create a CA and the controller's certificate in DIR");
  p->init_->add_option("DIR", a.dir, "directory (created 0700)")->required();
  p->init_->add_option("--host", a.hosts, "extra name or IP the controller is reached by (repeat)");
  p->init_->add_option("--days", a.days, "validity of the CA in days (default 3650)");

  auto* issue = pki->add_subcommand("issue", "issue a node or user certificate")->require_subcommand(1);
  p->issue_node_ = issue->add_subcommand("node", "certificate for an agent: CN = NAME, O = node");
  p->issue_node_->add_option("NAME", a.name, "node name (as the agent's --node)")->required();
  p->issue_user_ = issue->add_subcommand("user", "certificate for a person or script using dcuctl");
  p->issue_user_->add_option("NAME", a.name, "user name")->required();
  p->issue_user_->add_option("--role", a.role, "admin or read-only")
      ->required()
      ->check(CLI::IsMember({"admin", "read-only"}));
  for (CLI::App* sub : {p->issue_node_, p->issue_user_}) {
    sub->add_option("--dir", a.dir, "PKI directory made by 'pki init' (default dcufleet-pki)");
    sub->add_option("--days", a.days, "validity in days (default 365)");
  }
  p->token_ = pki->add_subcommand("token", "make a bearer token for dcuctl --token-file and add its "
                                           "hash to DIR/tokens.txt");
  p->token_->add_option("NAME", a.name, "user name")->required();
  p->token_->add_option("--role", a.role, "admin or read-only")
      ->required()
      ->check(CLI::IsMember({"admin", "read-only"}));
  p->token_->add_option("--dir", a.dir, "PKI directory (default dcufleet-pki)");
  return p;
}

bool PkiCommands::selected() const {
  return (init_ && init_->parsed()) || (issue_node_ && issue_node_->parsed()) ||
         (issue_user_ && issue_user_->parsed()) || (token_ && token_->parsed());
}

int PkiCommands::Run(std::ostream& out, std::ostream& err) {
  if (init_->parsed()) args_.action = "init";
  if (issue_node_->parsed()) args_.action = "issue-node";
  if (issue_user_->parsed()) args_.action = "issue-user";
  if (token_->parsed()) args_.action = "token";
  common::SubprocessRunner runner;
  return RunPki(args_, runner, out, err);
}

}  // namespace dcu::dcuctl
