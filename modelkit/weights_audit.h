#pragma once

// Verification of a model directory's safetensors weights (issue 19): the
// index against the directory, every shard's header against the index and
// the shard's own length, tensor shapes against config.json, and (asked for)
// each shard's sha256 against a manifest. The one home of these checks: the
// agent runs them before it reports a directory (with a cache, so a rescan
// costs a stat per file), dcuctl `model audit` runs them offline, and the
// scheduler reads the verdict the agent reported.
//
// Why: a directory with a missing shard loads silently in vLLM
// (vllm#34859); a truncated one fails only after minutes of loading with
// safetensors' MetadataIncompleteBuffer; a hand-edited config.json loads
// weights into the wrong shapes. The header checks read 8 + N bytes per
// shard, never the weights.

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "dcufleet/v1/catalog.pb.h"
#include "dcufleet/v1/types.pb.h"
#include "modelkit/config_audit.h"

namespace dcu::modelkit {

// Progress of --verify-content, after each chunk.
struct ContentProgress {
  std::string file;
  int64_t file_done = 0;
  int64_t file_total = 0;
  int64_t done = 0;
  int64_t total = 0;
};

struct WeightsAuditOptions {
  // config.json as parsed; null: no shape checks.
  const ModelConfig* config = nullptr;
  // The catalog's entry for the model; with it a shape finding says which
  // of config.json and the weights is wrong. Null: blame unknown.
  const dcufleet::v1::ModelEntry* catalog = nullptr;
  // sha256 of every shard against a manifest (reads every byte).
  bool verify_content = false;
  // The manifest; "" looks in the directory for sha256sums, SHA256SUMS,
  // sha256sums.txt or sha256sums.json (ManifestNames()).
  std::string manifest_path;
  // With verify_content and no manifest found: when every header check
  // passed, hash every shard and write the result to `sha256sums` in the
  // directory (tmp + rename), so the next content check and every copy made
  // from here compare against it ("a manifest recorded when a directory
  // first verified clean"). Without it, no manifest is a problem.
  bool record_manifest = false;
  // Called after each chunk while hashing (may be empty).
  std::function<void(const ContentProgress&)> progress;
  size_t chunk_bytes = 4 << 20;
};

// File names looked for as the manifest, in order.
const std::vector<std::string>& ManifestNames();

// Writes `sha256` (file name -> hex) as coreutils sha256sum lines to
// `path` through a temporary file renamed into place (never a half-written
// manifest). Names are sorted.
absl::Status WriteSha256Manifest(const std::string& path, const std::map<std::string, std::string>& sha256);

// Reads a manifest: coreutils `sha256sum` lines ("HEX  NAME" or "HEX *NAME")
// or a JSON object {"NAME": "HEX"} (or {"files": {...}}). INVALID_ARGUMENT
// naming the line for anything else. Names are file names in the directory.
absl::StatusOr<std::map<std::string, std::string>> ParseSha256Manifest(absl::string_view text);

// Runs the checks on directory `dir`. Never fails: what is wrong is in
// `problems`, each naming the file and the figures. Verdict NOT_VERIFIED
// when there are no safetensors to check (.bin checkpoints, no weights).
dcufleet::v1::WeightsVerification VerifyWeights(const std::string& dir,
                                                const WeightsAuditOptions& options);

// Sets `blame` on shape findings from the catalog's figures (the
// fingerprint): the weights agree with the catalog and config.json does not
// -> CONFIG; config.json agrees and the weights do not -> WEIGHTS. Also
// appends the verdict to each such finding's message. VerifyWeights calls
// it when given a catalog entry; the controller may call it on a report.
void BlameShapeProblems(const dcufleet::v1::ModelEntry& catalog,
                        dcufleet::v1::WeightsVerification* v);

// The first problem of a damaged verification as one line (the scheduler's
// per-node reason, e.g. "model-00007-of-00017.safetensors truncated: 3.1 of
// 3.9 GB"), with "(and N more problems)" when there are more; "" when clean.
std::string WeightsSummary(const dcufleet::v1::WeightsVerification& v);

// Header checks of the directories an agent reports, remembered by
// (name, size, mtime) of every file that goes into them (the index,
// config.json, every *.safetensors) and the config text: a rescan of an
// unchanged 62 GB directory costs a directory listing and its stats.
// Content checks are never cached (they are asked for explicitly).
// Thread-safe.
class WeightsAuditCache {
 public:
  explicit WeightsAuditCache(size_t max_entries = 4096) : max_entries_(max_entries) {}
  // VerifyWeights(dir, options) or the remembered answer (cached = true).
  dcufleet::v1::WeightsVerification Verify(const std::string& dir, const WeightsAuditOptions& options,
                                           absl::string_view config_text) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t max_entries_;
  absl::Mutex mu_;
  struct Entry {
    std::string fingerprint;
    dcufleet::v1::WeightsVerification result;
  };
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dcu::modelkit
