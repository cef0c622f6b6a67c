#include "tests/integration/gateway/gateway_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tests/fakes/fake_vllm/fake_env.h"

namespace dcu::testing {

absl::StatusOr<std::unique_ptr<RawConnection>> RawConnection::Open(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("connect to port ", port, " failed"));
  }
  return std::unique_ptr<RawConnection>(new RawConnection(fd));
}

RawConnection::~RawConnection() { Close(); }

void RawConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool RawConnection::Send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += n;
  }
  return true;
}

std::string RawConnection::Read(absl::Duration timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) <= 0) return "";
  char buf[65536];
  ssize_t n = recv(fd_, buf, sizeof(buf), 0);
  return n > 0 ? std::string(buf, n) : "";
}

std::string RawConnection::ReadAll(absl::Duration timeout) {
  std::string out;
  absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    std::string got = Read(end - absl::Now());
    if (got.empty()) break;
    out += got;
  }
  return out;
}

GatewayFixture::GatewayFixture() = default;
GatewayFixture::~GatewayFixture() = default;

FakeReplica* GatewayFixture::StartReplica(const std::string& served_name, ReplicaSpeed speed) {
  auto r = std::make_unique<FakeReplica>();
  r->port = PickFreePort();
  std::string log = dir_.Join(absl::StrCat("replica-", ++started_, "-", r->port, ".log"));
  r->process = std::make_unique<ChildProcess>(
      std::vector<std::string>{FakeVllmBinary(), "--model", "/models/" + served_name,
                               "--served-model-name", served_name, "--host", "127.0.0.1",
                               "--port", absl::StrCat(r->port), "--fake-ttft-ms",
                               absl::StrCat(speed.ttft_ms), "--fake-token-delay-ms",
                               absl::StrCat(speed.token_delay_ms), "--fake-max-concurrency",
                               absl::StrCat(speed.max_concurrency)},
      log, std::map<std::string, std::string>{{"FAKE_VLLM_SCENARIO", ""}});
  int port = r->port;
  bool up = WaitFor(
      [&] {
        auto resp = Get(port, "/health");
        return resp.ok() && resp->status == 200;
      },
      absl::Seconds(20));
  if (!up) return nullptr;
  replicas_.push_back(std::move(r));
  return replicas_.back().get();
}

void GatewayFixture::WriteReplicasFile(const std::string& json) {
  // Write then rename, so the gateway never reads half a file.
  std::string tmp = dir_.Join("replicas.json.tmp");
  std::ofstream(tmp, std::ios::trunc) << json;
  std::rename(tmp.c_str(), dir_.Join("replicas.json").c_str());
}

std::string GatewayFixture::ReplicasJson(const std::string& deployment,
                                         const std::string& served_name,
                                         const std::vector<FakeReplica*>& replicas, bool ready) {
  std::string out = absl::StrCat(R"({"models": [{"deployment": ")", deployment,
                                 R"(", "served_model_name": ")", served_name,
                                 R"(", "replicas": [)");
  for (size_t i = 0; i < replicas.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", R"({"host": "127.0.0.1", "port": )", replicas[i]->port,
                    R"(, "ready": )", ready ? "true" : "false", "}");
  }
  return out + "]}]}";
}

bool GatewayFixture::StartGateway(std::vector<std::string> extra_args, bool use_file) {
  std::string port_file = dir_.Join("gateway.port");
  std::remove(port_file.c_str());
  std::vector<std::string> argv = {BinPath("dcu-gateway"), "--listen", "127.0.0.1:0",
                                   "--port-file", port_file};
  if (use_file) {
    argv.push_back("--replicas-file");
    argv.push_back(dir_.Join("replicas.json"));
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  gateway_ = std::make_unique<ChildProcess>(argv, dir_.Join("gateway.log"));
  bool up = WaitFor(
      [&] {
        int port = 0;
        std::string text = ReadFileOrEmpty(port_file);
        return absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &port) && port > 0 &&
               (gateway_port_ = port) > 0;
      },
      absl::Seconds(20));
  return up;
}

void GatewayFixture::StopGateway() { gateway_.reset(); }

absl::StatusOr<common::HttpResponse> GatewayFixture::Post(
    int port, const std::string& path, const std::string& body,
    std::vector<std::pair<std::string, std::string>> headers) {
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.method = "POST";
  req.port = port;
  req.path = path;
  req.body = body;
  req.headers = std::move(headers);
  req.headers.push_back({"Content-Type", "application/json"});
  req.timeout = absl::Seconds(30);
  return http.Send(req);
}

absl::StatusOr<common::HttpResponse> GatewayFixture::Get(int port, const std::string& path) {
  common::SocketHttpClient http;
  common::HttpRequest req;
  req.port = port;
  req.path = path;
  req.timeout = absl::Seconds(5);
  return http.Send(req);
}

double GatewayFixture::Metric(int port, const std::string& name,
                              const std::string& finished_reason) {
  auto resp = Get(port, "/metrics");
  if (!resp.ok()) return -1;
  for (absl::string_view line : absl::StrSplit(resp->body, '\n')) {
    if (!absl::ConsumePrefix(&line, name + "{")) continue;
    if (!finished_reason.empty() &&
        line.find("finished_reason=\"" + finished_reason + "\"") == absl::string_view::npos) {
      continue;
    }
    double v = 0;
    size_t space = line.rfind(' ');
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &v)) return v;
  }
  return -1;
}

std::string GatewayFixture::Logs() const {
  std::string out;
  if (gateway_) out += "--- gateway\n" + gateway_->Log();
  for (const auto& r : replicas_) {
    out += absl::StrCat("--- replica ", r->port, "\n");
    std::string log = r->process->Log();
    out += log.size() > 3000 ? log.substr(log.size() - 3000) : log;
  }
  return out;
}

}  // namespace dcu::testing
