#include "common/tls_config.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/fs_util.h"
#include "common/status_util.h"

namespace dcu::common {
namespace {

// PEM files are small; anything bigger is not what the flag should name.
constexpr size_t kMaxPemBytes = 1 << 20;

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

BioPtr MemBio(absl::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

// Clears OpenSSL's thread-local error queue so a later caller does not see
// our failures; returns the first reason, if any.
std::string DrainOpenSslErrors() {
  std::string first;
  while (unsigned long e = ERR_get_error()) {
    if (first.empty()) {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof(buf));
      first = buf;
    }
  }
  return first;
}

absl::StatusOr<absl::Time> AsnTime(const ASN1_TIME* t) {
  struct tm tm;
  std::memset(&tm, 0, sizeof(tm));
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
    return absl::InvalidArgumentError("unreadable validity time");
  }
  return absl::FromTM(tm, absl::UTCTimeZone());
}

std::string Day(absl::Time t) { return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone()); }

std::string NameEntry(X509_NAME* name, int nid) {
  int idx = X509_NAME_get_index_by_NID(name, nid, -1);
  if (idx < 0) return "";
  X509_NAME_ENTRY* e = X509_NAME_get_entry(name, idx);
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(e);
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

absl::StatusOr<std::string> ReadPemText(const std::string& path, absl::string_view flag) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a file"));
  auto text = ReadSmallFile(path, kMaxPemBytes + 1);
  if (!text.ok()) return Annotate(text.status(), flag);
  if (text->size() > kMaxPemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", path, "': larger than ", kMaxPemBytes, " bytes; not a PEM file"));
  }
  if (text->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", path, "': not a PEM file (no '-----BEGIN' line)"));
  }
  return text;
}

}  // namespace

absl::Status CheckSecretFileMode(const std::string& path, absl::string_view what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, what, path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(what, " '", path, "' is not a regular file"));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s '%s' is accessible by group or others (mode %04o); refusing to use it: run "
        "'chmod 600 %s'",
        what, path, st.st_mode & 07777, path));
  }
  return absl::OkStatus();
}

absl::StatusOr<CertificateInfo> InspectCertificate(absl::string_view pem) {
  BioPtr bio = MemBio(pem);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    std::string why = DrainOpenSslErrors();
    return absl::InvalidArgumentError(absl::StrCat("no parseable certificate", why.empty() ? "" : ": ", why));
  }
  CertificateInfo info;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  info.common_name = NameEntry(subject, NID_commonName);
  info.organization = NameEntry(subject, NID_organizationName);
  DCU_ASSIGN_OR_RETURN(info.not_before, AsnTime(X509_get0_notBefore(cert.get())));
  DCU_ASSIGN_OR_RETURN(info.not_after, AsnTime(X509_get0_notAfter(cert.get())));
  return info;
}

absl::StatusOr<std::string> ReadCertificatePem(const std::string& path, absl::string_view flag) {
  DCU_ASSIGN_OR_RETURN(std::string text, ReadPemText(path, flag));
  // Every certificate in the file (a chain or a CA bundle) must parse and be
  // within its validity: an expired CA or leaf fails every handshake anyway,
  // and saying so here names the file.
  BioPtr bio = MemBio(text);
  int count = 0;
  absl::Time now = absl::Now();
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    ++count;
    auto not_after = AsnTime(X509_get0_notAfter(cert.get()));
    auto not_before = AsnTime(X509_get0_notBefore(cert.get()));
    if (!not_after.ok() || !not_before.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " '", path, "': certificate ", count, " has unreadable validity dates"));
    }
    std::string cn = NameEntry(X509_get_subject_name(cert.get()), NID_commonName);
    if (*not_after < now) {
      return absl::FailedPreconditionError(absl::StrCat(flag, " '", path, "': certificate '", cn,
                                                        "' expired on ", Day(*not_after)));
    }
    if (*not_before > now + absl::Minutes(5)) {
      return absl::FailedPreconditionError(absl::StrCat(flag, " '", path, "': certificate '", cn,
                                                        "' is not valid before ", Day(*not_before)));
    }
  }
  DrainOpenSslErrors();  // the end of the file reads as a "no start line" error
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", path, "': no parseable certificate in the file"));
  }
  return text;
}

absl::StatusOr<std::string> ReadPrivateKeyPem(const std::string& path, absl::string_view flag) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a file"));
  DCU_RETURN_IF_ERROR(CheckSecretFileMode(path, absl::StrCat(flag, " private key")));
  DCU_ASSIGN_OR_RETURN(std::string text, ReadPemText(path, flag));
  BioPtr bio = MemBio(text);
  // A null passphrase callback: an encrypted key fails instead of prompting.
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr,
                                      [](char*, int, int, void*) { return 0; }, nullptr));
  if (!key) {
    std::string why = DrainOpenSslErrors();
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " '", path, "': no parseable unencrypted private key", why.empty() ? "" : ": ", why));
  }
  return text;
}

absl::Status CheckKeyMatchesCertificate(absl::string_view cert_pem, absl::string_view key_pem,
                                        absl::string_view cert_path, absl::string_view key_path) {
  BioPtr cbio = MemBio(cert_pem);
  X509Ptr cert(PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr));
  BioPtr kbio = MemBio(key_pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(kbio.get(), nullptr,
                                      [](char*, int, int, void*) { return 0; }, nullptr));
  bool ok = cert && key && X509_check_private_key(cert.get(), key.get()) == 1;
  DrainOpenSslErrors();
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("private key '", key_path,
                                                   "' does not belong to certificate '", cert_path, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("token file name is empty");
  DCU_RETURN_IF_ERROR(CheckSecretFileMode(path, "token file"));
  auto text = ReadSmallFile(path, kMaxTokenBytes + 1);
  if (!text.ok()) return Annotate(text.status(), "token file");
  if (text->size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file '", path, "' is larger than ", kMaxTokenBytes, " bytes"));
  }
  std::string token(absl::StripAsciiWhitespace(*text));
  if (token.size() < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file '", path, "' holds ", token.size(),
                     " characters; a token has at least 16 (dcuctl pki token makes one)"));
  }
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      // Never echo the token or the offending byte's neighbourhood.
      return absl::InvalidArgumentError(absl::StrCat(
          "token file '", path, "' must hold one line of printable ASCII without spaces"));
    }
  }
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files) {
  if (files.cert.empty() || files.key.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls-cert and --tls-key");
  }
  DCU_ASSIGN_OR_RETURN(std::string cert, ReadCertificatePem(files.cert, "--tls-cert"));
  DCU_ASSIGN_OR_RETURN(std::string key, ReadPrivateKeyPem(files.key, "--tls-key"));
  DCU_RETURN_IF_ERROR(CheckKeyMatchesCertificate(cert, key, files.cert, files.key));
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!files.client_ca.empty()) {
    DCU_ASSIGN_OR_RETURN(options.pem_root_certs,
                         ReadCertificatePem(files.client_ca, "--tls-client-ca"));
    // Requested and verified when presented: agents and people with
    // certificates present one; a dcuctl with a bearer token does not.
    options.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  options.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsFiles& files, const std::string& token) {
  if (files.ca.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs --tls-ca (the CA that signed the controller's certificate)");
  }
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  grpc::SslCredentialsOptions options;
  DCU_ASSIGN_OR_RETURN(options.pem_root_certs, ReadCertificatePem(files.ca, "--tls-ca"));
  if (!files.cert.empty()) {
    DCU_ASSIGN_OR_RETURN(options.pem_cert_chain, ReadCertificatePem(files.cert, "--tls-cert"));
    DCU_ASSIGN_OR_RETURN(options.pem_private_key, ReadPrivateKeyPem(files.key, "--tls-key"));
    DCU_RETURN_IF_ERROR(
        CheckKeyMatchesCertificate(options.pem_cert_chain, options.pem_private_key, files.cert, files.key));
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(options);
  if (!token.empty()) {
    creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(token));
  }
  return creds;
}

grpc::ChannelArguments DefaultChannelArguments(int max_receive_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(kMaxRequestBytes);
  args.SetMaxReceiveMessageSize(max_receive_bytes);
  return args;
}

}  // namespace dcu::common
