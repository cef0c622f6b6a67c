#include "agent/fetch/http_model_source.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <limits>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_util.h"
#include "nlohmann/json.hpp"

namespace dcu::agent {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// The index and config are small; a mirror that answers with more is wrong.
constexpr uint64_t kMaxSmallFile = 64ull << 20;
constexpr size_t kChunk = 1 << 20;

// Files a Hugging Face repository usually has besides the weights, fetched
// when the mirror has them. The manifests are what ModelFetcher checks
// each shard's sha256 against.
const char* const kOptionalFiles[] = {
    "generation_config.json", "tokenizer.json",  "tokenizer_config.json", "special_tokens_map.json",
    "vocab.json",             "merges.txt",      "tokenizer.model",       "added_tokens.json",
    "chat_template.jinja",    "sha256sums",      "SHA256SUMS",            "sha256sums.json",
};

// One HTTP/1.1 exchange on its own connection.
class Exchange {
 public:
  Exchange(const HttpMirrorUrl& url, absl::Duration timeout)
      : url_(url), timeout_(std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout))), stream_(ioc_) {
    // Shards are many GiB; the fetcher counts. (Not boost::none: Boost
    // 1.74's parser compares a length against the optional, and any length
    // is greater than none.)
    parser_.body_limit(std::numeric_limits<uint64_t>::max());
  }

  // Connects, sends the request and reads the response header.
  absl::Status Start(http::verb verb, const std::string& target, int64_t range_from) {
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    auto endpoints = resolver.resolve(url_.host, std::to_string(url_.port), ec);
    if (ec) return Fail("resolve", ec);
    stream_.expires_after(timeout_);
    stream_.connect(endpoints, ec);
    if (ec) return Fail("connect", ec);
    http::request<http::empty_body> req(verb, target, 11);
    req.set(http::field::host, absl::StrCat(url_.host, ":", url_.port));
    req.set(http::field::user_agent, "dcu-agent");
    if (range_from > 0) req.set(http::field::range, absl::StrCat("bytes=", range_from, "-"));
    stream_.expires_after(timeout_);
    http::write(stream_, req, ec);
    if (ec) return Fail("send", ec);
    if (verb == http::verb::head) parser_.skip(true);
    stream_.expires_after(timeout_);
    http::read_header(stream_, buffer_, parser_, ec);
    if (ec) return Fail("read the response of", ec);
    return absl::OkStatus();
  }

  int status() const { return parser_.get().result_int(); }
  std::string header(http::field f) const { return std::string(parser_.get()[f]); }
  boost::optional<uint64_t> content_length() const { return parser_.content_length(); }

  // Streams the body to `sink`; UNAVAILABLE when the connection ends early.
  absl::Status Body(const std::function<absl::Status(absl::string_view)>& sink, int64_t* received) {
    std::string buf(kChunk, '\0');
    *received = 0;
    while (!parser_.is_done()) {
      parser_.get().body().data = buf.data();
      parser_.get().body().size = buf.size();
      beast::error_code ec;
      stream_.expires_after(timeout_);
      http::read(stream_, buffer_, parser_, ec);
      if (ec == http::error::need_buffer) ec = {};
      const size_t n = buf.size() - parser_.get().body().size;
      if (n > 0) {
        *received += static_cast<int64_t>(n);
        DCU_RETURN_IF_ERROR(sink(absl::string_view(buf.data(), n)));
      }
      if (ec) return Fail(absl::StrCat("read (after ", *received, " bytes of the body of)"), ec);
    }
    return absl::OkStatus();
  }

  const std::string& target() const { return target_; }
  void set_target(std::string t) { target_ = std::move(t); }

 private:
  absl::Status Fail(const std::string& what, const beast::error_code& ec) const {
    return absl::UnavailableError(
        absl::StrCat("mirror ", url_.host, ":", url_.port, ": ", what, " ", target_, ": ", ec.message()));
  }

  const HttpMirrorUrl& url_;
  const std::chrono::milliseconds timeout_;
  std::string target_;
  net::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::response_parser<http::buffer_body> parser_;
};

// An HTTP status as a Status (2xx: OK).
absl::Status StatusOf(int code, const std::string& what) {
  if (code >= 200 && code < 300) return absl::OkStatus();
  const std::string msg = absl::StrCat(what, ": HTTP ", code);
  if (code == 404 || code == 410) return absl::NotFoundError(msg);
  if (code >= 300 && code < 400) return absl::FailedPreconditionError(absl::StrCat(msg, " (redirects are not followed)"));
  if (code >= 500 || code == 429 || code == 408) return absl::UnavailableError(msg);
  return absl::FailedPreconditionError(msg);
}

}  // namespace

absl::StatusOr<HttpMirrorUrl> ParseMirrorUrl(const std::string& url) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("mirror URL '", url, "' ", why));
  };
  if (absl::StartsWith(url, "https://")) {
    return absl::UnimplementedError(absl::StrCat("mirror URL '", url, "': https mirrors are not supported yet (use http://)"));
  }
  if (!absl::StartsWith(url, "http://")) return bad("does not start with http://");
  std::string rest = url.substr(7);
  HttpMirrorUrl out;
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  out.prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!out.prefix.empty() && out.prefix.back() == '/') out.prefix.pop_back();
  for (char c : out.prefix) {
    if (c == '?' || c == '#' || c == ' ' || static_cast<unsigned char>(c) < 0x20) {
      return bad("has a query, fragment, space or control character in its path");
    }
  }
  if (authority.empty()) return bad("has no host");
  if (authority.find('@') != std::string::npos) return bad("has credentials (not supported)");
  size_t colon = authority.rfind(':');
  out.host = authority.substr(0, colon);
  if (colon != std::string::npos) {
    int port = 0;
    if (!absl::SimpleAtoi(authority.substr(colon + 1), &port) || port <= 0 || port > 65535) {
      return bad("has an invalid port");
    }
    out.port = port;
  }
  if (out.host.empty()) return bad("has no host");
  return out;
}

absl::StatusOr<std::unique_ptr<HttpModelSource>> HttpModelSource::Create(const std::string& mirror,
                                                                         const std::string& repo,
                                                                         absl::Duration io_timeout) {
  DCU_ASSIGN_OR_RETURN(HttpMirrorUrl url, ParseMirrorUrl(mirror));
  DCU_RETURN_IF_ERROR(CheckRelativeFileName(repo, "repository"));
  return std::unique_ptr<HttpModelSource>(new HttpModelSource(mirror, std::move(url), repo, io_timeout));
}

std::string HttpModelSource::Describe() const { return absl::StrCat("mirror ", mirror_, "/", repo_); }

std::string HttpModelSource::Target(const std::string& file) const {
  return absl::StrCat(url_.prefix, "/", repo_, "/resolve/main/", file);
}

absl::StatusOr<std::vector<SourceFile>> HttpModelSource::List(const std::string& model) {
  DCU_RETURN_IF_ERROR(CheckModelDirName(model));
  // The size of `file`, or NOT_FOUND.
  auto head = [&](const std::string& file) -> absl::StatusOr<int64_t> {
    Exchange x(url_, io_timeout_);
    x.set_target(Target(file));
    DCU_RETURN_IF_ERROR(x.Start(http::verb::head, x.target(), 0));
    DCU_RETURN_IF_ERROR(StatusOf(x.status(), absl::StrCat(Describe(), ": ", file)));
    if (!x.content_length()) {
      return absl::FailedPreconditionError(absl::StrCat(Describe(), ": ", file, ": no Content-Length in the answer to HEAD"));
    }
    return static_cast<int64_t>(*x.content_length());
  };
  std::vector<SourceFile> out;
  auto add = [&](const std::string& file, bool required) -> absl::Status {
    DCU_RETURN_IF_ERROR(CheckRelativeFileName(file, absl::StrCat(Describe(), ": file")));
    auto size = head(file);
    if (absl::IsNotFound(size.status()) && !required) return absl::OkStatus();
    if (!size.ok()) return size.status();
    out.push_back({file, *size});
    return absl::OkStatus();
  };
  DCU_RETURN_IF_ERROR(add("config.json", true));
  // The shards: what the index names, or the one model.safetensors.
  std::string index_text;
  absl::Status index = Read(model, "model.safetensors.index.json", 0, [&](absl::string_view chunk) {
    if (index_text.size() + chunk.size() > kMaxSmallFile) {
      return absl::FailedPreconditionError(
          absl::StrCat(Describe(), ": model.safetensors.index.json is larger than ", kMaxSmallFile, " bytes"));
    }
    index_text.append(chunk.data(), chunk.size());
    return absl::OkStatus();
  });
  if (absl::IsNotFound(index)) {
    DCU_RETURN_IF_ERROR(add("model.safetensors", true));
  } else {
    DCU_RETURN_IF_ERROR(index);
    auto j = nlohmann::json::parse(index_text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return absl::DataLossError(
          absl::StrCat(Describe(), ": model.safetensors.index.json is not JSON with a weight_map object"));
    }
    std::set<std::string> shards;
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string()) {
        return absl::DataLossError(absl::StrCat(Describe(), ": model.safetensors.index.json maps tensor '", tensor,
                                                "' to a non-string"));
      }
      shards.insert(file.get<std::string>());
    }
    out.push_back({"model.safetensors.index.json", static_cast<int64_t>(index_text.size())});
    for (const auto& s : shards) DCU_RETURN_IF_ERROR(add(s, true));
  }
  for (const char* f : kOptionalFiles) DCU_RETURN_IF_ERROR(add(f, false));
  std::sort(out.begin(), out.end(), [](const SourceFile& a, const SourceFile& b) { return a.name < b.name; });
  return out;
}

absl::Status HttpModelSource::Read(const std::string& model, const std::string& name, int64_t offset,
                                   const std::function<absl::Status(absl::string_view)>& sink) {
  DCU_RETURN_IF_ERROR(CheckModelDirName(model));
  DCU_RETURN_IF_ERROR(CheckRelativeFileName(name));
  if (offset < 0) return absl::InvalidArgumentError(absl::StrCat("negative offset ", offset, " for '", name, "'"));
  Exchange x(url_, io_timeout_);
  x.set_target(Target(name));
  DCU_RETURN_IF_ERROR(x.Start(http::verb::get, x.target(), offset));
  DCU_RETURN_IF_ERROR(StatusOf(x.status(), absl::StrCat(Describe(), ": ", name)));
  int64_t skip = 0;
  if (offset > 0) {
    if (x.status() == 206) {
      // Content-Range: bytes FIRST-LAST/TOTAL must start where we asked.
      const std::string range = x.header(http::field::content_range);
      if (!absl::StartsWith(range, absl::StrCat("bytes ", offset, "-"))) {
        return absl::DataLossError(absl::StrCat(Describe(), ": ", name, ": asked for bytes from ", offset,
                                                ", the mirror answered Content-Range '", range, "'"));
      }
    } else {
      skip = offset;  // Range ignored: the whole file; drop what we have
    }
  }
  int64_t received = 0;
  return x.Body(
      [&](absl::string_view chunk) -> absl::Status {
        if (skip > 0) {
          const int64_t drop = std::min<int64_t>(skip, static_cast<int64_t>(chunk.size()));
          chunk.remove_prefix(static_cast<size_t>(drop));
          skip -= drop;
          if (chunk.empty()) return absl::OkStatus();
        }
        return sink(chunk);
      },
      &received);
}

}  // namespace dcu::agent
