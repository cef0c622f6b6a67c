#pragma once

// A model from an HTTP mirror laid out like a Hugging Face / ModelScope
// repository (issue 19, distribution): `<mirror>/<repo>/resolve/main/<file>`.
// A local mirror of the hub (no hub access is assumed or needed). The file
// list comes from the repository's own index: config.json,
// model.safetensors.index.json and every shard its weight_map names (or a
// single model.safetensors), plus the usual small files and a sha256
// manifest when the mirror has them (HEAD: present or 404). Reads send
// `Range: bytes=OFFSET-`, so ModelFetcher resumes a .part where it stopped;
// a mirror that ignores Range (200) is read from the start and the prefix
// skipped. ModelFetcher checks everything it gets (names, lengths,
// safetensors headers, sha256) as from any source.
//
// Plain http:// only: https:// is refused with a clear error (TLS to a
// mirror is not built yet). Redirects are not followed (a local mirror
// serves its files itself).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/fetch/model_source.h"

namespace dcu::agent {

struct HttpMirrorUrl {
  std::string host;
  int port = 80;
  // The path before the repository, no trailing '/' ("" or "/hf").
  std::string prefix;
};

// "http://HOST[:PORT][/PREFIX]": INVALID_ARGUMENT naming the URL and what
// is wrong; UNIMPLEMENTED for https://.
absl::StatusOr<HttpMirrorUrl> ParseMirrorUrl(const std::string& url);

class HttpModelSource : public ModelSource {
 public:
  // `mirror`: "http://mirror:8080[/prefix]"; `repo`: "Qwen/Qwen3-32B"
  // (plain relative components). `io_timeout` bounds each network wait
  // (connect, a header, a body chunk), not a whole file.
  static absl::StatusOr<std::unique_ptr<HttpModelSource>> Create(const std::string& mirror, const std::string& repo,
                                                                 absl::Duration io_timeout = absl::Seconds(30));

  std::string Describe() const override;
  // `model` is the local directory's name (checked, used in messages); the
  // files are the repository's.
  absl::StatusOr<std::vector<SourceFile>> List(const std::string& model) override;
  absl::Status Read(const std::string& model, const std::string& name, int64_t offset,
                    const std::function<absl::Status(absl::string_view)>& sink) override;

 private:
  HttpModelSource(std::string mirror, HttpMirrorUrl url, std::string repo, absl::Duration io_timeout)
      : mirror_(std::move(mirror)), url_(std::move(url)), repo_(std::move(repo)), io_timeout_(io_timeout) {}
  std::string Target(const std::string& file) const;

  const std::string mirror_;
  const HttpMirrorUrl url_;
  const std::string repo_;
  const absl::Duration io_timeout_;
};

}  // namespace dcu::agent
