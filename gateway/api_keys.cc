#include "gateway/api_keys.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/hash.h"

namespace dcu::gateway {
namespace {

// Equal-length hex digests compared without an early exit.
bool SameDigest(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!absl::ascii_isxdigit(c)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<ApiKeyStore> ApiKeyStore::Parse(const std::string& text) {
  ApiKeyStore store;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    std::string line(absl::StripAsciiWhitespace(raw.substr(0, raw.find('#'))));
    if (line.empty()) continue;
    std::vector<std::string> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_no, ": want 'NAME SHA256_HEX SCOPE', got ", f.size(),
                       " fields"));
    }
    if (!IsHex64(f[1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_no, ": key '", f[0], "': the hash must be 64 hex digits (SHA-256)"));
    }
    Key k;
    k.name = f[0];
    k.sha256_hex = absl::AsciiStrToLower(f[1]);
    if (f[2] == "*") {
      k.all_models = true;
    } else {
      for (absl::string_view m : absl::StrSplit(f[2], ',', absl::SkipEmpty())) {
        k.models.insert(std::string(m));
      }
      if (k.models.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", line_no, ": key '", f[0], "': empty scope"));
      }
    }
    store.keys_.push_back(std::move(k));
  }
  return store;
}

absl::StatusOr<ApiKeyStore> ApiKeyStore::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read API keys file '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  auto store = Parse(ss.str());
  if (!store.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' ", store.status().message()));
  }
  return store;
}

ApiKeyStore::Verdict ApiKeyStore::Check(const std::string& authorization,
                                        const std::vector<std::string>& model_names,
                                        std::string* key_name) const {
  absl::string_view v = absl::StripAsciiWhitespace(authorization);
  if (!absl::StartsWithIgnoreCase(v, "bearer ")) return Verdict::kMissing;
  v.remove_prefix(7);
  v = absl::StripAsciiWhitespace(v);
  if (v.empty()) return Verdict::kMissing;
  std::string digest = common::Sha256Hex(v);
  for (const auto& k : keys_) {
    if (!SameDigest(digest, k.sha256_hex)) continue;
    if (key_name) *key_name = k.name;
    if (k.all_models) return Verdict::kAllowed;
    for (const auto& m : model_names) {
      if (k.models.count(m)) return Verdict::kAllowed;
    }
    return Verdict::kOutOfScope;
  }
  return Verdict::kUnknown;
}

absl::Status ApiKeyStore::Add(const std::string& name, const std::string& sha256_hex,
                              bool all_models, const std::vector<std::string>& models) {
  if (!IsHex64(sha256_hex)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key '", name, "': the hash must be 64 hex digits (SHA-256)"));
  }
  if (!all_models && models.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("key '", name, "': empty scope"));
  }
  Key k;
  k.name = name;
  k.sha256_hex = absl::AsciiStrToLower(sha256_hex);
  k.all_models = all_models;
  k.models.insert(models.begin(), models.end());
  keys_.push_back(std::move(k));
  return absl::OkStatus();
}

ApiKeyStore::Verdict ApiKeyStore::CheckEither(const ApiKeyStore* a, const ApiKeyStore* b,
                                              const std::string& authorization,
                                              const std::vector<std::string>& model_names,
                                              std::string* key_name) {
  Verdict best = Verdict::kUnknown;
  bool any = false;
  for (const ApiKeyStore* store : {a, b}) {
    if (store == nullptr) continue;
    any = true;
    std::string name;
    Verdict v = store->Check(authorization, model_names, &name);
    if (v == Verdict::kAllowed) {
      if (key_name) *key_name = name;
      return v;
    }
    if (v == Verdict::kOutOfScope) {
      if (key_name) *key_name = name;
      best = v;
    } else if (v == Verdict::kMissing && best == Verdict::kUnknown) {
      best = v;
    }
  }
  return any ? best : Verdict::kAllowed;
}

}  // namespace dcu::gateway
