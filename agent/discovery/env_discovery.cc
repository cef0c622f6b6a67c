#include "agent/discovery/env_discovery.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dcu::agent {
namespace {

namespace fs = std::filesystem;

// Normalised (PEP 503, '-' and '.' as '_') names we report, and the key used.
const std::vector<std::pair<std::string, std::string>>& Wanted() {
  static const auto* wanted = new std::vector<std::pair<std::string, std::string>>{
      {"vllm", "vllm"},       {"sglang", "sglang"},       {"torch", "torch"},
      {"triton", "triton"},   {"pytorch_triton_rocm", "pytorch-triton-rocm"},
      {"flash_attn", "flash_attn"}, {"transformers", "transformers"}};
  return *wanted;
}

std::string Normalise(std::string name) {
  name = absl::AsciiStrToLower(name);
  std::replace(name.begin(), name.end(), '-', '_');
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

// "Version: 0.9.2" from METADATA / PKG-INFO.
std::string MetadataVersion(const fs::path& dir) {
  for (const char* file : {"METADATA", "PKG-INFO"}) {
    std::ifstream in(dir / file);
    std::string line;
    for (int n = 0; in && n < 64 && std::getline(in, line); ++n) {
      if (absl::StartsWith(line, "Version:")) {
        return std::string(absl::StripAsciiWhitespace(line.substr(8)));
      }
      if (line.empty()) break;  // end of the headers
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<dcufleet::v1::RuntimeEnvironment> ReadCondaEnvironment(const std::string& prefix) {
  std::error_code ec;
  fs::path lib = fs::path(prefix) / "lib";
  fs::path site;
  std::string python;
  for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (absl::StartsWith(name, "python3") && fs::is_directory(it->path() / "site-packages", ec)) {
      site = it->path() / "site-packages";
      python = name.substr(6);
      break;
    }
  }
  if (site.empty()) {
    return absl::NotFoundError(absl::StrCat("'", prefix, "' has no lib/python3*/site-packages"));
  }
  dcufleet::v1::RuntimeEnvironment env;
  env.set_kind("bare");
  env.set_location(fs::absolute(prefix).lexically_normal().string());
  (*env.mutable_package_versions())["python"] = python;
  for (fs::directory_iterator it(site, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    absl::string_view stem = name;
    if (!absl::ConsumeSuffix(&stem, ".dist-info") && !absl::ConsumeSuffix(&stem, ".egg-info")) continue;
    size_t dash = stem.find('-');
    if (dash == absl::string_view::npos) continue;
    std::string pkg = Normalise(std::string(stem.substr(0, dash)));
    for (const auto& [wanted, key] : Wanted()) {
      if (pkg != wanted) continue;
      std::string version = MetadataVersion(it->path());
      if (version.empty()) version = std::string(stem.substr(dash + 1));
      (*env.mutable_package_versions())[key] = version;
    }
  }
  return env;
}

std::vector<dcufleet::v1::RuntimeEnvironment> DiscoverCondaEnvironments(
    const std::vector<std::string>& roots) {
  std::vector<dcufleet::v1::RuntimeEnvironment> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& p) {
    auto env = ReadCondaEnvironment(p.string());
    if (env.ok() && seen.insert(env->location()).second) out.push_back(*std::move(env));
  };
  for (const auto& root : roots) {
    std::error_code ec;
    add(root);
    std::vector<fs::path> children;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_directory(ec)) children.push_back(it->path());
    }
    std::sort(children.begin(), children.end());
    for (const auto& c : children) add(c);
  }
  return out;
}

}  // namespace dcu::agent
