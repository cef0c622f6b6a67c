#include "dcuctl/output.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/units.h"
#include "google/protobuf/util/json_util.h"

namespace dcu::dcuctl {

void Table::Print(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) width[i] = header_[i].size();
  for (const auto& r : rows_) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& r) {
    std::string line;
    for (size_t i = 0; i < width.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      line += cell;
      if (i + 1 < width.size()) line += std::string(width[i] - cell.size() + 3, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print_row(header_);
  for (const auto& r : rows_) print_row(r);
}

nlohmann::json ProtoToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, o);
  return nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
}

namespace {

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const char* kReserved[] = {"true", "false", "null", "yes", "no", "on", "off", "~"};
  for (const char* r : kReserved) {
    if (s == r) return true;
  }
  if (s.find_first_of(":#{}[],&*?|<>=!%@`\"'\n\t\\") != std::string::npos) return true;
  // Control characters only in a quoted (JSON-escaped) scalar.
  if (std::any_of(s.begin(), s.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      })) {
    return true;
  }
  if (s.front() == ' ' || s.back() == ' ' || s.front() == '-') return true;
  bool numeric = std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
  });
  return numeric;
}

std::string Scalar(const nlohmann::json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    return NeedsQuotes(s) ? v.dump() : s;
  }
  return v.dump();
}

void Emit(const nlohmann::json& v, int indent, std::string& out) {
  std::string pad(indent, ' ');
  if (v.is_object()) {
    if (v.empty()) {
      out += "{}\n";
      return;
    }
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first || indent > 0) out += pad;
      first = false;
      out += it.key() + ":";
      const auto& c = it.value();
      if ((c.is_object() || c.is_array()) && !c.empty()) {
        out += "\n";
        Emit(c, c.is_array() ? indent : indent + 2, out);
      } else if (c.is_object()) {
        out += " {}\n";
      } else if (c.is_array()) {
        out += " []\n";
      } else {
        out += " " + Scalar(c) + "\n";
      }
    }
  } else if (v.is_array()) {
    for (const auto& c : v) {
      out += pad + "- ";
      if (c.is_object() && !c.empty()) {
        std::string inner;
        Emit(c, indent + 2, inner);
        // The first key goes on the dash line.
        size_t start = inner.find_first_not_of(' ');
        out += inner.substr(start);
      } else if (c.is_array() && !c.empty()) {
        out += "\n";
        Emit(c, indent + 2, out);
      } else {
        out += (c.is_object() ? "{}" : c.is_array() ? "[]" : Scalar(c)) + "\n";
      }
    }
  } else {
    out += pad + Scalar(v) + "\n";
  }
}

}  // namespace

std::string ToYaml(const nlohmann::json& value) {
  std::string out;
  Emit(value, 0, out);
  return out;
}

void PrintStructured(const nlohmann::json& value, const std::string& format, std::ostream& out) {
  if (format == "yaml") {
    out << ToYaml(value);
  } else {
    out << value.dump(2) << "\n";
  }
}

std::string Ago(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  int64_t now = absl::ToUnixMillis(absl::Now());
  return absl::StrCat(common::HumanDuration(std::max<int64_t>(0, now - unix_ms)), " ago");
}

}  // namespace dcu::dcuctl
