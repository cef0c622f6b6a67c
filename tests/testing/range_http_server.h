#pragma once

// A small HTTP/1.1 file server for tests of the HTTP mirror source (issue
// 19): serves `<dir>/<file>` at `<repo-prefix>/resolve/main/<file>` like a
// Hugging Face mirror, answers GET and HEAD, and honours `Range:
// bytes=N-` with 206 and Content-Range (python3 -m http.server does not).
// One connection at a time on its own thread, loopback only. Knobs make it
// misbehave the ways a real network does: close a connection after a
// number of body bytes, or ignore Range.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dcu::testing {

class RangeHttpServer {
 public:
  // Serves `dir` under `/REPO/resolve/main/` for any REPO.
  explicit RangeHttpServer(std::string dir);
  ~RangeHttpServer();
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The next GET of `file` is cut (the connection closed) after `bytes`
  // bytes of its body, once.
  void CutNextBodyOf(const std::string& file, int64_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    cut_file_ = file;
    cut_after_ = bytes;
  }
  // Answer 200 with the whole file whatever Range asks.
  void IgnoreRange(bool on) { ignore_range_ = on; }
  // "GET file bytes=N-" / "HEAD file" per request, in order.
  std::vector<std::string> Requests() const;

 private:
  void Serve();
  void Handle(int fd);

  const std::string dir_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::string cut_file_;  // guarded by mu_
  int64_t cut_after_ = -1;  // guarded by mu_
  std::atomic<bool> ignore_range_{false};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace dcu::testing
