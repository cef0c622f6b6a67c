// The controller's tokens file and certificate subject parsing.
#include <cstdint>

#include "controller/service/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = dcu::controller::TokenTable::Parse(text, "fuzz");
  if (table.ok()) (void)table->Find("0123456789abcdef0123456789abcdef");
  size_t nl = text.find('\n');
  absl::string_view cn = nl == absl::string_view::npos ? text : text.substr(0, nl);
  (void)dcu::controller::IdentityFromCertificate(text, cn);
  return 0;
}
