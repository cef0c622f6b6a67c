#include "modelkit/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace dcu::modelkit {
namespace {

using json = nlohmann::json;

absl::Status Invalid(absl::string_view what) { return absl::InvalidArgumentError(what); }

// A JSON number that is a non-negative integer (nlohmann keeps integers
// that fit in u64 as unsigned; larger ones and fractions become floats).
bool AsCount(const json& v, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

// What a JSON value is, for messages ("a string", "-3").
std::string Describe(const json& v) {
  if (v.is_number()) return v.dump();
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::string: return "a string";
    case json::value_t::array: return absl::StrCat("an array of ", v.size());
    case json::value_t::object: return "an object";
    default: return "a value";
  }
}

std::string DimsText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&s, i ? ", " : "", shape[i]);
  return s + "]";
}

absl::StatusOr<SafetensorsTensor> ParseTensor(const std::string& name, const json& v) {
  SafetensorsTensor t;
  t.name = name;
  if (!v.is_object()) {
    return Invalid(absl::StrCat("tensor '", name, "' is ", Describe(v), ", not an object"));
  }
  auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string()) {
    return Invalid(absl::StrCat("tensor '", name, "' has no string \"dtype\""));
  }
  t.dtype = dtype->get<std::string>();
  auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array()) {
    return Invalid(absl::StrCat("tensor '", name, "' has no \"shape\" array"));
  }
  // Real tensors have a handful of dimensions; a hostile header must not
  // make us hold millions.
  if (shape->size() > 64) {
    return Invalid(absl::StrCat("tensor '", name, "' has ", shape->size(), " dimensions"));
  }
  for (const auto& d : *shape) {
    uint64_t n = 0;
    if (!AsCount(d, &n) || n > static_cast<uint64_t>(INT64_MAX)) {
      return Invalid(absl::StrCat("tensor '", name, "' has shape entry ", Describe(d),
                                  ", not a non-negative integer"));
    }
    t.shape.push_back(static_cast<int64_t>(n));
  }
  auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2) {
    return Invalid(absl::StrCat("tensor '", name, "' has no \"data_offsets\" [begin, end]"));
  }
  if (!AsCount((*offsets)[0], &t.begin) || !AsCount((*offsets)[1], &t.end)) {
    return Invalid(absl::StrCat("tensor '", name, "' has data_offsets [", Describe((*offsets)[0]),
                                ", ", Describe((*offsets)[1]),
                                "], not two non-negative integers"));
  }
  if (t.begin > t.end) {
    return Invalid(absl::StrCat("tensor '", name, "' has data_offsets [", t.begin, ", ", t.end,
                                "]: begin after end"));
  }
  return t;
}

// shape x dtype in bytes; false when it overflows or is not whole bytes.
bool TensorBytes(const SafetensorsTensor& t, int bits, uint64_t* bytes, std::string* why) {
  uint64_t elements = 1;
  for (int64_t d : t.shape) {
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) {
      *why = absl::StrCat("shape ", DimsText(t.shape), " overflows");
      return false;
    }
  }
  uint64_t total_bits = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(bits), &total_bits)) {
    *why = absl::StrCat("shape ", DimsText(t.shape), " overflows");
    return false;
  }
  if (total_bits % 8 != 0) {
    *why = absl::StrCat("shape ", DimsText(t.shape), " of ", t.dtype, " is not a whole number of bytes");
    return false;
  }
  *bytes = total_bits / 8;
  return true;
}

}  // namespace

std::optional<int> SafetensorsDtypeBits(absl::string_view dtype) {
  // safetensors' Dtype enum (tensor.rs), with its sizes in bits.
  static const std::pair<absl::string_view, int> kDtypes[] = {
      {"BOOL", 8},   {"U8", 8},       {"I8", 8},       {"F8_E5M2", 8}, {"F8_E4M3", 8},
      {"F8_E8M0", 8}, {"I16", 16},    {"U16", 16},     {"F16", 16},    {"BF16", 16},
      {"I32", 32},   {"U32", 32},     {"F32", 32},     {"F64", 64},    {"I64", 64},
      {"U64", 64},   {"F4", 4},       {"F6_E2M3", 6},  {"F6_E3M2", 6}, {"C64", 64},
  };
  for (const auto& [name, bits] : kDtypes) {
    if (name == dtype) return bits;
  }
  return std::nullopt;
}

bool IsUnquantizedFloat(absl::string_view dtype) {
  return dtype == "F16" || dtype == "BF16" || dtype == "F32" || dtype == "F64";
}

absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeaderJson(absl::string_view text,
                                                             uint64_t header_bytes) {
  SafetensorsHeader h;
  h.header_bytes = header_bytes;
  // nlohmann keeps the last of two equal keys silently; a header naming a
  // tensor twice is damaged, so the parser's callback sees every top-level key.
  std::set<std::string> keys;
  std::string duplicate;
  json root;
  try {
    root = json::parse(
        text.begin(), text.end(),
        [&](int depth, json::parse_event_t event, json& parsed) {
          if (event == json::parse_event_t::key && depth == 1 && duplicate.empty() &&
              !keys.insert(parsed.get<std::string>()).second) {
            duplicate = parsed.get<std::string>();
          }
          return true;
        },
        /*allow_exceptions=*/true);
  } catch (const json::parse_error& e) {
    return Invalid(absl::StrCat("header is not valid JSON at byte ", e.byte, " of ", text.size(), ": ",
                                e.what()));
  } catch (const std::exception& e) {
    return Invalid(absl::StrCat("header cannot be parsed: ", e.what()));
  }
  if (!root.is_object()) {
    return Invalid(absl::StrCat("header is ", Describe(root), ", not a JSON object"));
  }
  if (!duplicate.empty()) return Invalid(absl::StrCat("header names '", duplicate, "' twice"));
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return Invalid("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) {
          return Invalid(absl::StrCat("__metadata__ '", m.key(), "' is ", Describe(*m), ", not a string"));
        }
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    absl::StatusOr<SafetensorsTensor> t = ParseTensor(it.key(), *it);
    if (!t.ok()) return t.status();
    h.tensors.push_back(*std::move(t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // The library's validate(): sorted by offsets, each range starts where
  // the previous ended (from 0), and its length is shape x dtype.
  uint64_t at = 0;
  const SafetensorsTensor* prev = nullptr;
  for (const auto& t : h.tensors) {
    if (t.begin < at) {
      return Invalid(absl::StrCat("tensor '", t.name, "' [", t.begin, ", ", t.end, ") overlaps '",
                                  prev->name, "' [", prev->begin, ", ", prev->end, ")"));
    }
    if (t.begin > at) {
      return Invalid(absl::StrCat("tensor '", t.name, "' starts at ", t.begin, " but ",
                                  prev ? absl::StrCat("'", prev->name, "' ends at ", at)
                                       : std::string("the data starts at 0"),
                                  ": a hole of ", t.begin - at, " bytes"));
    }
    std::optional<int> bits = SafetensorsDtypeBits(t.dtype);
    if (!bits) {
      h.unknown_dtype_tensors.push_back(t.name);
    } else {
      uint64_t bytes = 0;
      std::string why;
      if (!TensorBytes(t, *bits, &bytes, &why)) {
        return Invalid(absl::StrCat("tensor '", t.name, "': ", why));
      }
      if (bytes != t.end - t.begin) {
        return Invalid(absl::StrCat("tensor '", t.name, "' is ", t.dtype, " ", DimsText(t.shape), " = ",
                                    bytes, " bytes but its data_offsets [", t.begin, ", ", t.end,
                                    "] hold ", t.end - t.begin));
      }
    }
    at = t.end;
    prev = &t;
  }
  h.data_bytes = at;
  return h;
}

absl::StatusOr<SafetensorsHeader> ParseSafetensorsPrefix(absl::string_view prefix,
                                                         uint64_t file_bytes) {
  if (file_bytes < 8 || prefix.size() < 8) {
    return absl::DataLossError(absl::StrCat("file is ", file_bytes,
                                            " bytes, too short for the 8-byte header length"));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(prefix[i]);  // little-endian
  if (n > kSafetensorsMaxHeaderBytes) {
    return Invalid(absl::StrCat("header length ", n, " is over safetensors' limit of ",
                                kSafetensorsMaxHeaderBytes, " bytes"));
  }
  if (n > file_bytes - 8) {
    return absl::DataLossError(absl::StrCat("truncated inside its header: the header is ", n,
                                            " bytes but the file has ", file_bytes - 8,
                                            " after the length"));
  }
  if (prefix.size() < 8 + n) {
    return absl::InvalidArgumentError(absl::StrCat("only ", prefix.size() - 8, " of the header's ", n,
                                                   " bytes were given"));
  }
  return ParseSafetensorsHeaderJson(prefix.substr(8, n), n);
}

absl::StatusOr<SafetensorsHeader> ReadSafetensorsHeader(const std::string& path,
                                                        uint64_t* file_bytes) {
  *file_bytes = 0;
  // O_NONBLOCK: a FIFO planted under the model root must not hang the scan.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    absl::Status s = absl::ErrnoToStatus(e, "");
    return absl::Status(s.code(), absl::StrCat("cannot open: ", std::strerror(e)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) return absl::InternalError(absl::StrCat("fstat: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return absl::FailedPreconditionError("not a regular file");
  *file_bytes = static_cast<uint64_t>(st.st_size);
  auto read_at = [&](char* buf, size_t len, off_t off) -> absl::Status {
    size_t done = 0;
    while (done < len) {
      ssize_t r = ::pread(fd, buf + done, len - done, off + static_cast<off_t>(done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return absl::DataLossError(absl::StrCat("read: ", std::strerror(errno)));
      if (r == 0) return absl::DataLossError("file shrank while being read");
      done += static_cast<size_t>(r);
    }
    return absl::OkStatus();
  };
  std::string buf(8, '\0');
  if (*file_bytes >= 8) {
    if (absl::Status s = read_at(buf.data(), 8, 0); !s.ok()) return s;
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(buf[i]);
    // Only read N bytes once the length passed the checks the parser makes.
    if (n <= kSafetensorsMaxHeaderBytes && n <= *file_bytes - 8) {
      buf.resize(8 + n);
      if (absl::Status s = read_at(buf.data() + 8, n, 8); !s.ok()) return s;
    }
  }
  return ParseSafetensorsPrefix(buf, *file_bytes);
}

}  // namespace dcu::modelkit
