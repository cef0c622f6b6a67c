#include "common/hash.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "absl/strings/escaping.h"

namespace dcu::common {

namespace {

std::string Hex(const unsigned char* digest, unsigned int len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) return "";
  return Hex(digest, len);
}

struct Sha256Stream::Impl {
  EVP_MD_CTX* ctx = nullptr;
  bool ok = false;
};

Sha256Stream::Sha256Stream() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  impl_->ok = impl_->ctx != nullptr && EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) == 1;
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256Stream::Update(absl::string_view data) {
  if (impl_->ok) impl_->ok = EVP_DigestUpdate(impl_->ctx, data.data(), data.size()) == 1;
}

std::string Sha256Stream::FinalHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!impl_->ok || EVP_DigestFinal_ex(impl_->ctx, digest, &len) != 1) return "";
  impl_->ok = false;
  return Hex(digest, len);
}

absl::StatusOr<std::string> RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    return absl::UnavailableError("the system's random generator (OpenSSL RAND_bytes) failed");
  }
  return absl::BytesToHexString(raw);
}

}  // namespace dcu::common
