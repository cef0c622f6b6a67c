// gateway-loadgen: a closed-loop HTTP load generator for the gateway
// benchmark (bench/gateway/run.sh). C clients, each sending one request at a
// time on a fresh connection until N requests have been sent in all; prints
// one JSON object: requests, failures, seconds, req_per_s, p50_ms, p99_ms.
//   gateway-loadgen --port 8080 --requests 5000 --concurrency 200
//     --path /v1/chat/completions --body '{"model":"m","max_tokens":8,...}'
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  int port = 8080;
  int requests = 1000;
  int concurrency = 16;
  std::string path = "/v1/chat/completions";
  std::string body;
};

// One exchange; true on a 200 read to the end of the response.
bool Exchange(const Options& o, const std::string& wire) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  size_t off = 0;
  while (ok && off < wire.size()) {
    ssize_t n = send(fd, wire.data() + off, wire.size() - off, MSG_NOSIGNAL);
    if (n <= 0) ok = false;
    else off += n;
  }
  std::string got;
  char buf[16384];
  while (ok) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) ok = false;
    if (n <= 0) break;
    got.append(buf, n);
  }
  close(fd);
  // Connection: close on the request, so the end of the answer is EOF.
  return ok && got.compare(0, 12, "HTTP/1.1 200") == 0 &&
         got.find("\r\n\r\n") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--port") o.port = std::atoi(v.c_str());
    else if (k == "--requests") o.requests = std::atoi(v.c_str());
    else if (k == "--concurrency") o.concurrency = std::atoi(v.c_str());
    else if (k == "--path") o.path = v;
    else if (k == "--body") o.body = v;
    else {
      fprintf(stderr, "gateway-loadgen: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (o.body.empty() || o.requests <= 0 || o.concurrency <= 0 || o.port <= 0) {
    fprintf(stderr, "usage: gateway-loadgen --port P --requests N --concurrency C --body JSON [--path P]\n");
    return 2;
  }
  std::string wire = "POST " + o.path + " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                     "Connection: close\r\nContent-Length: " + std::to_string(o.body.size()) +
                     "\r\n\r\n" + o.body;
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::mutex mu;
  std::vector<double> latencies_ms;
  latencies_ms.reserve(o.requests);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < o.concurrency; ++c) {
    clients.emplace_back([&] {
      std::vector<double> mine;
      while (next.fetch_add(1) < o.requests) {
        auto s = std::chrono::steady_clock::now();
        bool ok = Exchange(o, wire);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
        if (!ok) ++failures;
        mine.push_back(ms);
      }
      std::lock_guard<std::mutex> l(mu);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : clients) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    if (latencies_ms.empty()) return 0.0;
    size_t i = std::min(latencies_ms.size() - 1, static_cast<size_t>(p * latencies_ms.size()));
    return latencies_ms[i];
  };
  printf("{\"requests\": %zu, \"failures\": %d, \"seconds\": %.3f, \"req_per_s\": %.1f, "
         "\"p50_ms\": %.2f, \"p99_ms\": %.2f, \"max_ms\": %.2f}\n",
         latencies_ms.size(), failures.load(), secs, latencies_ms.size() / secs, pct(0.50),
         pct(0.99), latencies_ms.empty() ? 0.0 : latencies_ms.back());
  return failures.load() == 0 ? 0 : 1;
}
