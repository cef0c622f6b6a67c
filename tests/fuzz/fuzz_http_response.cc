// What the agent's health checks and /metrics scrapes, and the gateway's
// scraper, read back from an engine's port (common/http_client): whatever
// listens there answers, a crashed engine's successor, a squatter, a proxy.
// Besides "nothing crashes": a parsed answer's body is never larger than
// what arrived (a chunked body decodes to at most its own bytes), which is
// what a wrapped chunk size broke (HostileChunkSizesAndLengthsAreRefused;
// corpus/http_response/regression-chunk-size-wraps).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/http_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  auto resp = dcu::common::ParseHttpResponse(raw);
  if (!resp.ok()) {
    if (resp.status().message().empty()) {
      std::fprintf(stderr, "a refusal without words\n");
      std::abort();
    }
    return 0;
  }
  if (resp->body.size() > raw.size()) {
    std::fprintf(stderr, "a body of %zu bytes from an answer of %zu\n", resp->body.size(),
                 raw.size());
    std::abort();
  }
  return 0;
}
