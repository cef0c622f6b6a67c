#include "agent/discovery/node_discovery.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "modelkit/config_audit.h"
#include "agent/discovery/env_discovery.h"

namespace dcu::agent {

namespace fs = std::filesystem;

NodeDiscovery::NodeDiscovery(DiscoveryOptions options, common::ProcessRunner* runner)
    : options_(std::move(options)), runner_(runner) {}

dcufleet::v1::ModelDirectory NodeDiscovery::ScanModelDirectory(
    const std::string& path, size_t max_config_bytes, modelkit::WeightsAuditCache* weights_cache) {
  // The audit without a catalog: shape, shards, weight bytes, the weights'
  // header and shape checks (modelkit/weights_audit.h). The controller
  // audits the config text again against its catalog.
  modelkit::AuditOptions opts;
  opts.weights_cache = weights_cache;
  dcufleet::v1::AuditReport report = modelkit::AuditModelDirectory(path, opts);
  dcufleet::v1::ModelDirectory dir = modelkit::ToModelDirectory(report);
  dir.set_path(path);
  dir.set_name(fs::path(path).filename().string());
  std::ifstream in(fs::path(path) / "config.json", std::ios::binary);
  if (in) {
    std::string text(max_config_bytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() > max_config_bytes) {
      auto* f = dir.add_findings();
      f->set_severity(dcufleet::v1::FINDING_WARNING);
      f->set_code("config_too_large");
      f->set_field("config.json");
      f->set_message(absl::StrCat(path, "/config.json is larger than ", max_config_bytes,
                                  " bytes; not sent to the controller"));
    } else {
      dir.set_config_json(text);
    }
  }
  std::error_code ec;
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(path, ec)) entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  for (auto& e : entries) dir.add_entries(e);
  return dir;
}

std::vector<dcufleet::v1::RuntimeEnvironment> NodeDiscovery::ListImages(
    const std::string& cli, common::ProcessRunner* runner, std::vector<std::string>* notes) {
  std::vector<dcufleet::v1::RuntimeEnvironment> out;
  if (cli.empty() || !runner) return out;
  common::ProcessOptions o;
  o.timeout = absl::Seconds(15);
  auto r = runner->Run({cli, "images", "--format", "{{.Repository}}:{{.Tag}}"}, o);
  if (!r.ok() || r->exit_code != 0) {
    if (notes) {
      notes->push_back(absl::StrCat(cli, " images: ",
                                    r.ok() ? absl::StripAsciiWhitespace(r->stderr_data)
                                           : r.status().message()));
    }
    return out;
  }
  for (absl::string_view line : absl::StrSplit(r->stdout_data, '\n', absl::SkipEmpty())) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StrContains(line, "<none>")) continue;
    dcufleet::v1::RuntimeEnvironment env;
    env.set_kind("container");
    env.set_location(std::string(line));
    out.push_back(std::move(env));
  }
  return out;
}

void NodeDiscovery::Fill(dcufleet::v1::NodeInventory* inventory, bool force) {
  absl::Time now = absl::Now();
  bool rescan;
  {
    absl::MutexLock lock(&mu_);
    rescan = force || !scanned_ || now - scanned_at_ >= options_.rescan_interval;
  }
  if (rescan) {
    std::vector<dcufleet::v1::ModelDirectory> models;
    std::vector<dcufleet::v1::Finding> findings;
    for (const auto& root : options_.model_roots) {
      std::error_code ec;
      if (!fs::is_directory(root, ec)) {
        dcufleet::v1::Finding f;
        f.set_severity(dcufleet::v1::FINDING_WARNING);
        f.set_code("model_root_missing");
        f.set_field("--model-root");
        f.set_message(absl::StrCat("model root '", root, "' is not a directory"));
        findings.push_back(f);
        continue;
      }
      std::vector<std::string> dirs;
      for (const auto& e : fs::directory_iterator(root, ec)) {
        // Only real directories directly under the root: a symlink could
        // point anywhere on the node.
        if (e.is_directory(ec) && !e.is_symlink(ec) && fs::exists(e.path() / "config.json", ec)) {
          dirs.push_back(e.path().string());
        }
      }
      std::sort(dirs.begin(), dirs.end());
      for (const auto& d : dirs) models.push_back(ScanModelDirectory(d, options_.max_config_bytes, &weights_cache_));
    }
    std::vector<dcufleet::v1::RuntimeEnvironment> envs =
        DiscoverCondaEnvironments(options_.env_roots);
    std::vector<std::string> notes;
    for (auto& img : ListImages(options_.container_cli, runner_, &notes)) envs.push_back(img);
    for (const auto& n : notes) {
      dcufleet::v1::Finding f;
      f.set_severity(dcufleet::v1::FINDING_INFO);
      f.set_code("container_cli_unavailable");
      f.set_field("--container-cli");
      f.set_message(n);
      findings.push_back(f);
    }
    absl::MutexLock lock(&mu_);
    models_ = std::move(models);
    envs_ = std::move(envs);
    findings_ = std::move(findings);
    scanned_ = true;
    scanned_at_ = now;
  }
  absl::MutexLock lock(&mu_);
  for (const auto& m : models_) *inventory->add_models() = m;
  for (const auto& e : envs_) *inventory->add_environments() = e;
  for (const auto& f : findings_) *inventory->add_findings() = f;
}

}  // namespace dcu::agent
