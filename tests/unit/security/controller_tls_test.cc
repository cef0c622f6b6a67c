// The real dcu-controller over TLS on loopback, with certificates made by
// `dcuctl pki` (the openssl CLI): who may connect, who may do what, what a
// node may say, and what hostile requests do. Each refusal is checked to
// leave the fleet unchanged.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/process_runner.h"
#include "common/tls_config.h"
#include "dcufleet/v1/fleet.grpc.pb.h"
#include "dcufleet/v1/node.grpc.pb.h"
#include "absl/strings/match.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_env.h"
#include "tests/unit/security/security_test_util.h"

namespace dcu {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::BinPath;
using testing::ChildProcess;
using testing::WaitFor;

struct CmdResult {
  int exit_code;
  std::string out, err;
};

CmdResult RunCmd(std::vector<std::string> argv) {
  common::SubprocessRunner runner;
  common::ProcessOptions o;
  o.timeout = absl::Seconds(30);
  o.env["DCUFLEET_CONTROLLER"] = "";
  o.env["DCUFLEET_TOKEN_FILE"] = "";
  auto r = runner.Run(argv, o);
  if (!r.ok()) return {-100, "", std::string(r.status().message())};
  return {r->exit_code, r->stdout_data, r->stderr_data};
}

std::string Read(const std::string& path) { return testing::ReadFileOrEmpty(path); }

class ControllerTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    pki_ = dir_->Join("pki");
    other_ = dir_->Join("other");
    testing::MakeStandardPki(pki_);
    // A second, unrelated CA with its own node and user: the wrong CA.
    testing::Pki({"init", other_});
    testing::Pki({"issue-node", other_, "node-a"});
    testing::Pki({"issue-user", other_, "alice", "admin"});
    testing::MakeExpiredNodeCert(pki_, "node-old", dir_->Join("expired"));
    controller_ = StartController({"--tls-cert", P("controller.crt"), "--tls-key", P("controller.key"),
                                   "--tls-client-ca", P("ca.crt"), "--tokens-file", P("tokens.txt")},
                                  &port_)
                      .release();
    ASSERT_NE(port_, 0) << controller_->Log();
  }
  static void TearDownTestSuite() {
    // Whatever happened, no secret reached the controller's log.
    std::string log = controller_->Log();
    for (const char* t : {"carol", "dave"}) {
      std::string token(absl::StripAsciiWhitespace(Read(P(absl::StrCat("tokens/", t, ".token")))));
      EXPECT_THAT(log, Not(HasSubstr(token))) << t;
    }
    EXPECT_THAT(log, Not(HasSubstr("PRIVATE KEY")));
    delete controller_;
    delete dir_;
  }

  static std::string P(const std::string& rel) { return pki_ + "/" + rel; }
  static std::string O(const std::string& rel) { return other_ + "/" + rel; }
  static std::string Addr(int port = 0) { return absl::StrCat("127.0.0.1:", port ? port : port_); }

  static std::unique_ptr<ChildProcess> StartController(std::vector<std::string> extra, int* port) {
    static int n = 0;
    std::string tag = absl::StrCat("ctl", n++);
    std::string port_file = dir_->Join(tag + ".port");
    std::vector<std::string> argv = {BinPath("dcu-controller"), "--listen", "127.0.0.1:0", "--db",
                                     dir_->Join(tag + ".db"), "--port-file", port_file};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto c = std::make_unique<ChildProcess>(argv, dir_->Join(tag + ".log"));
    *port = 0;
    WaitFor([&] { return std::filesystem::exists(port_file) || !c->Running(); }, absl::Seconds(15));
    if (std::filesystem::exists(port_file)) {
      std::string text(absl::StripAsciiWhitespace(Read(port_file)));
      EXPECT_TRUE(absl::SimpleAtoi(text, port));
    }
    return c;
  }

  // A channel with our checked credentials (CA + optional cert/key + token).
  static std::shared_ptr<grpc::Channel> Channel(common::ClientTlsFiles files, const std::string& token = "") {
    auto creds = common::MakeChannelCredentials(files, token);
    EXPECT_TRUE(creds.ok()) << creds.status();
    return grpc::CreateCustomChannel(Addr(), *creds, common::DefaultChannelArguments(common::kMaxResponseBytes));
  }
  // Raw gRPC credentials, for what our loader refuses to build (expired).
  static std::shared_ptr<grpc::Channel> RawChannel(const std::string& ca, const std::string& cert,
                                                   const std::string& key) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = Read(ca);
    o.pem_cert_chain = Read(cert);
    o.pem_private_key = Read(key);
    return grpc::CreateChannel(Addr(), grpc::SslCredentials(o));
  }
  static std::shared_ptr<grpc::Channel> Admin() {
    return Channel({P("ca.crt"), P("users/alice.crt"), P("users/alice.key")});
  }
  static std::string Token(const std::string& name) {
    return std::string(absl::StripAsciiWhitespace(Read(P("tokens/" + name + ".token"))));
  }

  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }
  static grpc::Status ListNodes(std::shared_ptr<grpc::Channel> ch, dcufleet::v1::ListNodesResponse* out = nullptr) {
    dcufleet::v1::ListNodesResponse resp;
    auto ctx = Ctx();
    grpc::Status s = dcufleet::v1::FleetService::NewStub(ch)->ListNodes(ctx.get(), {}, &resp);
    if (out) *out = resp;
    return s;
  }
  static std::set<std::string> NodeNames() {
    dcufleet::v1::ListNodesResponse resp;
    EXPECT_TRUE(ListNodes(Admin(), &resp).ok());
    std::set<std::string> names;
    for (const auto& n : resp.nodes()) names.insert(n.name());
    return names;
  }
  static int DeploymentCount() {
    dcufleet::v1::ListDeploymentsResponse resp;
    auto ctx = Ctx();
    grpc::Status s = dcufleet::v1::FleetService::NewStub(Admin())->ListDeployments(ctx.get(), {}, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.deployments_size();
  }
  static grpc::Status Deploy(std::shared_ptr<grpc::Channel> ch, const dcufleet::v1::DeploymentSpec& spec) {
    dcufleet::v1::DeployRequest req;
    *req.mutable_spec() = spec;
    dcufleet::v1::DeployResponse resp;
    auto ctx = Ctx();
    return dcufleet::v1::FleetService::NewStub(ch)->Deploy(ctx.get(), req, &resp);
  }
  // Opens NodeService.Connect, sends Hello as `node_name`, returns the
  // stream's first answer (Welcome) or its final status.
  static grpc::Status Hello(std::shared_ptr<grpc::Channel> ch, const std::string& node_name,
                            bool* welcomed) {
    auto ctx = Ctx();
    auto stub = dcufleet::v1::NodeService::NewStub(ch);
    auto rw = stub->Connect(ctx.get());
    dcufleet::v1::AgentMessage m;
    m.mutable_hello()->set_node_name(node_name);
    m.mutable_hello()->set_agent_version("test");
    rw->Write(m);
    dcufleet::v1::ControllerMessage reply;
    *welcomed = rw->Read(&reply) && reply.has_welcome();
    rw->WritesDone();
    if (*welcomed) ctx->TryCancel();
    return rw->Finish();
  }

  static testing::TempDir* dir_;
  static std::string pki_, other_;
  static ChildProcess* controller_;
  static int port_;
};
testing::TempDir* ControllerTlsTest::dir_ = nullptr;
std::string ControllerTlsTest::pki_;
std::string ControllerTlsTest::other_;
ChildProcess* ControllerTlsTest::controller_ = nullptr;
int ControllerTlsTest::port_ = 0;

TEST_F(ControllerTlsTest, AdminCertificateAndTokensWork) {
  EXPECT_TRUE(ListNodes(Admin()).ok());
  EXPECT_TRUE(ListNodes(Channel({P("ca.crt"), P("users/bob.crt"), P("users/bob.key")})).ok());
  EXPECT_TRUE(ListNodes(Channel({P("ca.crt")}, Token("carol"))).ok());
  EXPECT_TRUE(ListNodes(Channel({P("ca.crt")}, Token("dave"))).ok());
}

TEST_F(ControllerTlsTest, MissingOrUnknownCredentialsAreUnauthenticated) {
  grpc::Status none = ListNodes(Channel({P("ca.crt")}));
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED) << none.error_message();
  EXPECT_THAT(none.error_message(), HasSubstr("no client certificate and no bearer token"));
  grpc::Status unknown = ListNodes(Channel({P("ca.crt")}, "0123456789abcdef0123456789abcdef"));
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(unknown.error_message(), Not(HasSubstr("0123456789abcdef")));
  // A plaintext client cannot even start the handshake.
  auto plain = grpc::CreateChannel(Addr(), grpc::InsecureChannelCredentials());
  EXPECT_EQ(ListNodes(plain).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(DeploymentCount(), 0);
}

TEST_F(ControllerTlsTest, WrongCaIsRefusedBothWays) {
  // A client certificate from another CA fails the handshake.
  grpc::Status s = ListNodes(Channel({P("ca.crt"), O("users/alice.crt"), O("users/alice.key")}));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  bool welcomed = true;
  s = Hello(Channel({P("ca.crt"), O("nodes/node-a.crt"), O("nodes/node-a.key")}), "node-a", &welcomed);
  EXPECT_FALSE(welcomed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  // A client trusting another CA does not accept the controller.
  s = ListNodes(Channel({O("ca.crt"), P("users/alice.crt"), P("users/alice.key")}));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  s = ListNodes(Channel({O("ca.crt")}, Token("dave")));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(NodeNames().count("node-a"), 0u);
}

TEST_F(ControllerTlsTest, ExpiredClientCertificateIsRefused) {
  bool welcomed = true;
  grpc::Status s = Hello(RawChannel(P("ca.crt"), dir_->Join("expired.crt"), dir_->Join("expired.key")),
                         "node-old", &welcomed);
  EXPECT_FALSE(welcomed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_EQ(NodeNames().count("node-old"), 0u);
  // Our own loader says why before any handshake.
  auto creds = common::MakeChannelCredentials({P("ca.crt"), dir_->Join("expired.crt"), dir_->Join("expired.key")});
  EXPECT_THAT(creds.status().message(), HasSubstr("expired on"));
}

TEST_F(ControllerTlsTest, NodeMaySpeakOnlyForItself) {
  auto node_a = Channel({P("ca.crt"), P("nodes/node-a.crt"), P("nodes/node-a.key")});
  bool welcomed = true;
  grpc::Status s = Hello(node_a, "node-b", &welcomed);
  EXPECT_FALSE(welcomed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("'node-a' may not speak for node 'node-b'"));
  EXPECT_EQ(NodeNames().count("node-b"), 0u);
  // As itself it is welcome and registered.
  s = Hello(node_a, "node-a", &welcomed);
  EXPECT_TRUE(welcomed) << s.error_message();
  EXPECT_EQ(NodeNames().count("node-a"), 1u);
  // An admin is not a node, and a node is not a dcuctl user.
  s = Hello(Admin(), "alice", &welcomed);
  EXPECT_FALSE(welcomed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(NodeNames().count("alice"), 0u);
  s = ListNodes(node_a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  dcufleet::v1::DeploymentSpec spec;
  spec.set_model("qwen3-32b");
  EXPECT_EQ(Deploy(node_a, spec).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(ControllerTlsTest, ReadOnlyCannotChangeAnything) {
  dcufleet::v1::DeploymentSpec spec;
  spec.set_model("qwen3-32b");
  for (auto ch : {Channel({P("ca.crt")}, Token("carol")),
                  Channel({P("ca.crt"), P("users/bob.crt"), P("users/bob.key")})}) {
    grpc::Status s = Deploy(ch, spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("needs the admin role"));
    dcufleet::v1::ReapNodeRequest reap;
    reap.set_node("node-a");
    dcufleet::v1::ReapNodeResponse reap_resp;
    auto ctx = Ctx();
    EXPECT_EQ(dcufleet::v1::FleetService::NewStub(ch)->ReapNode(ctx.get(), reap, &reap_resp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(DeploymentCount(), 0);
  // The admin reaches the core (which knows no such model here).
  grpc::Status s = Deploy(Channel({P("ca.crt")}, Token("dave")), spec);
  EXPECT_NE(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// Every FleetService method, including ones added after this test was
// written: unauthenticated callers get nothing, read-only callers only reads.
TEST_F(ControllerTlsTest, EveryMethodIsGuarded) {
  auto call = [](std::shared_ptr<grpc::Channel> ch, const std::string& method) {
    grpc::GenericStub stub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice empty("");
    grpc::ByteBuffer req(&empty, 1), resp;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &req, &resp, [&](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      status = s;
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return status;
  };
  auto nobody = Channel({P("ca.crt")});
  auto reader = Channel({P("ca.crt")}, Token("carol"));
  const auto* svc = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("dcufleet.v1.FleetService");
  for (int i = 0; i < svc->method_count(); ++i) {
    std::string name = svc->method(i)->name();
    std::string path = absl::StrCat("/", svc->full_name(), "/", name);
    EXPECT_EQ(call(nobody, path).error_code(), grpc::StatusCode::UNAUTHENTICATED) << path;
    grpc::Status r = call(reader, path);
    bool read = absl::StartsWith(name, "Get") || absl::StartsWith(name, "List") ||
                absl::StartsWith(name, "Watch");
    if (read) {
      EXPECT_NE(r.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path << ": " << r.error_message();
      EXPECT_NE(r.error_code(), grpc::StatusCode::UNAUTHENTICATED) << path;
    } else {
      EXPECT_EQ(r.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path;
    }
  }
  // A service the controller never listed is denied even to an admin.
  EXPECT_EQ(call(Admin(), "/dcufleet.v1.Secret/Run").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(DeploymentCount(), 0);
}

TEST_F(ControllerTlsTest, HostileDeploymentsAreRefusedAndNothingRuns) {
  auto admin = Admin();
  dcufleet::v1::DeploymentSpec big;
  big.set_model(std::string(1 << 20, 'a'));
  grpc::Status s = Deploy(admin, big);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("spec.model"));
  EXPECT_LT(s.error_message().size(), 300u);

  std::string marker = dir_->Join("pwned");
  std::vector<std::string> hostile = {"x; touch " + marker, "$(touch " + marker + ")",
                                      "`touch " + marker + "`", "x && touch " + marker,
                                      "--privileged", "../../../etc/passwd"};
  const auto* desc = dcufleet::v1::DeploymentSpec::descriptor();
  for (int i = 0; i < desc->field_count(); ++i) {
    const auto* f = desc->field(i);
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_STRING) continue;
    for (const auto& bad : hostile) {
      dcufleet::v1::DeploymentSpec spec;
      spec.set_model("qwen3-32b");
      spec.GetReflection()->SetString(&spec, f, bad);
      s = Deploy(admin, spec);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << f->name() << "=" << bad;
      EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat("spec.", f->name())));
    }
  }
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(DeploymentCount(), 0);
  // Names in other requests too.
  dcufleet::v1::GetNodeRequest get;
  get.set_name("node-a; touch " + marker);
  dcufleet::v1::NodeView view;
  auto ctx = Ctx();
  EXPECT_EQ(dcufleet::v1::FleetService::NewStub(admin)->GetNode(ctx.get(), get, &view).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// Every string field of every FleetService request (and of the messages
// nested in it), as an admin: refused or kept as text, never executed, never
// a crash, nothing deployed. Walks the descriptors, so RPCs and fields added
// later are covered.
TEST_F(ControllerTlsTest, EveryRequestStringIsTextNeverACommand) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::Message;
  std::string marker = dir_->Join("pwned-any");
  const std::vector<std::string> hostile = {"$(touch " + marker + ")", "`touch " + marker + "`",
                                            "x; touch " + marker, "--privileged"};
  auto admin = Admin();
  grpc::GenericStub stub(admin);
  google::protobuf::DynamicMessageFactory factory;
  const auto* svc = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      "dcufleet.v1.FleetService");
  ASSERT_NE(svc, nullptr);
  int calls = 0;
  for (int i = 0; i < svc->method_count(); ++i) {
    const auto* method = svc->method(i);
    std::string path = absl::StrCat("/", svc->full_name(), "/", method->name());
    // (message descriptor path) pairs: top-level strings and strings one
    // message deep.
    std::vector<std::vector<const FieldDescriptor*>> targets;
    const auto* in = method->input_type();
    for (int f = 0; f < in->field_count(); ++f) {
      const FieldDescriptor* fd = in->field(f);
      if (fd->is_repeated()) continue;
      if (fd->cpp_type() == FieldDescriptor::CPPTYPE_STRING) targets.push_back({fd});
      if (fd->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        for (int g = 0; g < fd->message_type()->field_count(); ++g) {
          const FieldDescriptor* inner = fd->message_type()->field(g);
          if (!inner->is_repeated() && inner->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
            targets.push_back({fd, inner});
          }
        }
      }
    }
    for (const auto& target : targets) {
      for (const auto& bad : hostile) {
        std::unique_ptr<Message> req(factory.GetPrototype(in)->New());
        Message* m = req.get();
        for (size_t k = 0; k + 1 < target.size(); ++k) m = m->GetReflection()->MutableMessage(m, target[k], &factory);
        m->GetReflection()->SetString(m, target.back(), bad);
        std::string bytes = req->SerializeAsString();
        grpc::Slice slice(bytes);
        grpc::ByteBuffer buf(&slice, 1), resp;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        std::mutex mu;
        std::condition_variable cv;
        bool done = false;
        stub.UnaryCall(&ctx, path, grpc::StubOptions(), &buf, &resp, [&](grpc::Status) {
          std::lock_guard<std::mutex> lock(mu);
          done = true;
          cv.notify_all();
        });
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return done; });
        ++calls;
      }
    }
  }
  EXPECT_GT(calls, 20);
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_TRUE(controller_->Running());
  EXPECT_TRUE(ListNodes(Admin()).ok());
  EXPECT_EQ(DeploymentCount(), 0);
}

TEST_F(ControllerTlsTest, OversizedMessageIsRefusedAndControllerSurvives) {
  // A client without our send limit: the controller's own limit must hold.
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = Read(P("ca.crt"));
  o.pem_cert_chain = Read(P("users/alice.crt"));
  o.pem_private_key = Read(P("users/alice.key"));
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto ch = grpc::CreateCustomChannel(Addr(), grpc::SslCredentials(o), args);
  dcufleet::v1::DeploymentSpec spec;
  spec.set_model(std::string(common::kMaxRequestBytes + 1024, 'a'));
  grpc::Status s = Deploy(ch, spec);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // Our clients refuse to send it at all.
  s = Deploy(Admin(), spec);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(ListNodes(Admin()).ok());
  EXPECT_TRUE(controller_->Running());
  EXPECT_EQ(DeploymentCount(), 0);
}

TEST_F(ControllerTlsTest, BadSetupsStopTheControllerWithTheFileNamed) {
  std::string loose = dir_->Join("loose.key");
  std::filesystem::copy_file(P("controller.key"), loose);
  std::filesystem::permissions(loose, std::filesystem::perms(0644));
  struct Case {
    std::vector<std::string> flags;
    std::string want;
  } cases[] = {
      {{"--tls-cert", P("controller.crt"), "--tls-key", loose, "--tls-client-ca", P("ca.crt")},
       "loose.key' is accessible by group or others"},
      {{"--tokens-file", P("tokens.txt")}, "--tokens-file needs TLS"},
      {{"--tls-cert", P("controller.crt"), "--tls-key", P("controller.key")},
       "neither --tls-client-ca nor --tokens-file"},
      {{"--tls-cert", P("controller.crt"), "--tls-key", P("nodes/node-a.key"), "--tls-client-ca", P("ca.crt")},
       "does not belong to certificate"},
      {{"--tls-cert", dir_->Join("expired.crt"), "--tls-key", dir_->Join("expired.key"), "--tls-client-ca",
        P("ca.crt")},
       "expired on"},
  };
  for (const auto& c : cases) {
    int port = 0;
    auto ctl = StartController(c.flags, &port);
    EXPECT_EQ(ctl->Wait(absl::Seconds(15)), 2) << c.want;
    EXPECT_EQ(port, 0);
    EXPECT_THAT(ctl->Log(), HasSubstr(c.want));
  }
  CmdResult r = RunCmd({BinPath("dcu-controller"), "--listen", "0.0.0.0:0", "--db", dir_->Join("x.db")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("without TLS"));
}

TEST_F(ControllerTlsTest, DcuctlWithTokenFileAndCertificates) {
  std::vector<std::string> base = {BinPath("dcuctl"), "--controller", Addr(), "--tls-ca", P("ca.crt")};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), more.begin(), more.end());
    return RunCmd(argv);
  };
  CmdResult r = with({"--token-file", P("tokens/carol.token"), "get", "nodes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = with({"--token-file", P("tokens/carol.token"), "deploy", "qwen3-32b"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_THAT(r.err, HasSubstr("refused"));
  r = with({"--tls-cert", P("users/alice.crt"), "--tls-key", P("users/alice.key"), "get", "nodes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = with({"get", "nodes"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  // The environment works as the flag does.
  {
    common::SubprocessRunner runner;
    common::ProcessOptions o;
    o.env["DCUFLEET_TOKEN_FILE"] = P("tokens/dave.token");
    o.env["DCUFLEET_TLS_CA"] = P("ca.crt");
    o.env["DCUFLEET_CONTROLLER"] = Addr();
    auto out = runner.Run({BinPath("dcuctl"), "get", "nodes"}, o);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->exit_code, 0) << out->stderr_data;
  }
  // A token file others can read is refused before anything is sent.
  std::string loose = dir_->Join("loose.token");
  std::filesystem::copy_file(P("tokens/dave.token"), loose);
  std::filesystem::permissions(loose, std::filesystem::perms(0644));
  r = with({"--token-file", loose, "get", "nodes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("chmod 600"));
  EXPECT_THAT(r.err, Not(HasSubstr(Token("dave"))));
  // A token never travels in plaintext.
  r = RunCmd({BinPath("dcuctl"), "--controller", Addr(), "--token-file", P("tokens/dave.token"), "get", "nodes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("needs TLS"));
  // Nor does dcuctl talk plaintext to a remote controller unless told.
  r = RunCmd({BinPath("dcuctl"), "--controller", "192.0.2.1:7070", "get", "nodes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("plaintext"));
}

TEST_F(ControllerTlsTest, AgentConnectsWithItsCertificateOnly) {
  std::string root = testing::SourceDir() + "/tests/fixtures/sysfs/bw1000-8x/root";
  auto agent_argv = [&](const std::string& node, const std::string& cert, const std::string& key) {
    // Its own state directory: the default (/var/lib/dcufleet/agent) would be
    // shared with every other test's agent on this host.
    return std::vector<std::string>{BinPath("dcu-agent"), "--controller", Addr(), "--node", node,
                                    "--root", root, "--state-dir", dir_->Join("agent-" + node),
                                    "--tls-ca", P("ca.crt"), "--tls-cert", cert,
                                    "--tls-key", key, "--max-backoff", "0.5"};
  };
  // A certificate for another node: refused at start-up, before dialing.
  CmdResult r = RunCmd(agent_argv("node-b", P("nodes/node-a.crt"), P("nodes/node-a.key")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is for node 'node-a' but this agent is node 'node-b'"));
  // A user certificate is not a node certificate.
  r = RunCmd(agent_argv("alice", P("users/alice.crt"), P("users/alice.key")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not a node certificate"));
  r = RunCmd(agent_argv("node-old", dir_->Join("expired.crt"), dir_->Join("expired.key")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("expired"));
  // Its own certificate: registered and Ready.
  ChildProcess agent(agent_argv("node-b", P("nodes/node-b.crt"), P("nodes/node-b.key")), dir_->Join("agent-b.log"));
  EXPECT_TRUE(WaitFor(
      [&] {
        dcufleet::v1::ListNodesResponse resp;
        if (!ListNodes(Admin(), &resp).ok()) return false;
        for (const auto& n : resp.nodes()) {
          if (n.name() == "node-b" && n.state() == dcufleet::v1::NODE_READY) return true;
        }
        return false;
      },
      absl::Seconds(15)))
      << agent.Log();
  // Plaintext to a remote controller is refused unless --insecure.
  r = RunCmd({BinPath("dcu-agent"), "--controller", "192.0.2.1:7070", "--node", "x", "--root", root});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("without TLS"));
}

}  // namespace
}  // namespace dcu
