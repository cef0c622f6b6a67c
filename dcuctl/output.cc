#include "dcuctl/output.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/time/clock.h"
#include "common/status_util.h"
#include "common/units.h"
#include "dcuctl/jsonpath.h"
#include "google/protobuf/util/json_util.h"

namespace dcu::dcuctl {

std::vector<size_t> Table::Widths() const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) width[i] = header_[i].size();
  for (const auto& r : rows_) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  return width;
}

std::string Table::FormatRow(const std::vector<std::string>& r, const std::vector<size_t>& width) {
  std::string line;
  for (size_t i = 0; i < width.size(); ++i) {
    std::string cell = i < r.size() ? r[i] : "";
    line += cell;
    if (i + 1 < width.size()) line += std::string(width[i] - std::min(width[i], cell.size()) + 3, ' ');
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

void Table::Print(std::ostream& out, bool header) const {
  const std::vector<size_t> width = Widths();
  if (header) out << FormatRow(header_, width) << "\n";
  for (const auto& r : rows_) out << FormatRow(r, width) << "\n";
}

bool IsTimestampField(const std::string& name) {
  return name == "at_ms" || absl::EndsWith(name, "_at_ms") || absl::EndsWith(name, "_seen_ms") ||
         absl::EndsWith(name, "_since_ms");
}

std::string Rfc3339(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

namespace {

// Rewrites the timestamp fields of `j` (the JSON of a `d` message), walking
// the descriptor rather than the keys, so that a map key that happens to
// end in "_at_ms" is left alone.
void ConvertTimestamps(const google::protobuf::Descriptor* d, nlohmann::json& j, int depth) {
  if (!j.is_object() || depth > 64) return;
  using FD = google::protobuf::FieldDescriptor;
  for (int i = 0; i < d->field_count(); ++i) {
    const FD* f = d->field(i);
    auto it = j.find(std::string(f->name()));
    if (it == j.end()) continue;
    if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
      const google::protobuf::Descriptor* m = f->message_type();
      if (f->is_map()) {
        const FD* value = m->map_value();
        if (value->cpp_type() == FD::CPPTYPE_MESSAGE && it->is_object()) {
          for (auto& [k, v] : it->items()) ConvertTimestamps(value->message_type(), v, depth + 1);
        }
      } else if (f->is_repeated() && it->is_array()) {
        for (auto& e : *it) ConvertTimestamps(m, e, depth + 1);
      } else {
        ConvertTimestamps(m, *it, depth + 1);
      }
      continue;
    }
    const bool integer = f->cpp_type() == FD::CPPTYPE_INT64 || f->cpp_type() == FD::CPPTYPE_UINT64;
    if (!integer || f->is_repeated() || !IsTimestampField(std::string(f->name()))) continue;
    int64_t ms = 0;
    if (it->is_string()) {
      if (!absl::SimpleAtoi(it->get<std::string>(), &ms)) continue;
    } else if (it->is_number_integer()) {
      ms = it->get<int64_t>();
    } else {
      continue;
    }
    std::string name(f->name());
    name.resize(name.size() - 3);  // "_ms"
    j.erase(it);
    j[name] = ms > 0 ? nlohmann::json(Rfc3339(ms)) : nlohmann::json(nullptr);
  }
}

// ConvertTimestamps undone: "created_at": "2026-…Z" | null -> "created_at_ms".
// `where`: the path to `j` ("" at the top, else "a.b[2]"), for the errors.
absl::Status RestoreTimestamps(const google::protobuf::Descriptor* d, nlohmann::json& j, int depth,
                               const std::string& where) {
  if (!j.is_object()) return absl::OkStatus();
  if (depth > 64) return absl::InvalidArgumentError(absl::StrCat(where, ": nested too deep"));
  auto path = [&](const std::string& field) { return where.empty() ? field : absl::StrCat(where, ".", field); };
  using FD = google::protobuf::FieldDescriptor;
  for (int i = 0; i < d->field_count(); ++i) {
    const FD* f = d->field(i);
    const std::string field(f->name());
    if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
      auto it = j.find(field);
      if (it == j.end() || f->is_map()) continue;
      const std::string inner = path(field);
      if (f->is_repeated() && it->is_array()) {
        for (size_t k = 0; k < it->size(); ++k) {
          DCU_RETURN_IF_ERROR(
              RestoreTimestamps(f->message_type(), (*it)[k], depth + 1, absl::StrCat(inner, "[", k, "]")));
        }
      } else {
        DCU_RETURN_IF_ERROR(RestoreTimestamps(f->message_type(), *it, depth + 1, inner));
      }
      continue;
    }
    const bool integer = f->cpp_type() == FD::CPPTYPE_INT64 || f->cpp_type() == FD::CPPTYPE_UINT64;
    if (!integer || f->is_repeated() || !IsTimestampField(field)) continue;
    const std::string shown = field.substr(0, field.size() - 3);
    // A time before 1970 has no place here and would print as null (unset):
    // refused in either form, so what is read is what prints.
    auto before_1970 = [&](const std::string& name, const std::string& value) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(name), ": ", value, " is before 1970-01-01 (times are after the Unix epoch)"));
    };
    if (auto raw = j.find(field); raw != j.end()) {
      // A number, or (YAML's plain scalars, proto3 JSON's int64) its text.
      int64_t v = 0;
      if ((raw->is_number() && raw->get<double>() < 0) ||
          (raw->is_string() && absl::SimpleAtoi(raw->get<std::string>(), &v) && v < 0)) {
        return before_1970(field, raw->dump());
      }
    }
    auto it = j.find(shown);
    if (it == j.end()) continue;
    int64_t ms = 0;
    if (it->is_string()) {
      absl::Time t;
      std::string why;
      if (!absl::ParseTime(absl::RFC3339_full, it->get<std::string>(), &t, &why)) {
        return absl::InvalidArgumentError(absl::StrCat(path(shown), ": '", it->get<std::string>(),
                                                       "' is not an RFC 3339 time (", why, ")"));
      }
      ms = absl::ToUnixMillis(t);
    } else if (it->is_number_integer()) {
      ms = it->get<int64_t>();
    } else if (!it->is_null()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(shown), ": a time is an RFC 3339 string or null"));
    }
    if (ms < 0) return before_1970(shown, it->dump());
    j.erase(it);
    if (ms != 0) j[field] = ms;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status JsonToProto(nlohmann::json j, google::protobuf::Message* message) {
  DCU_RETURN_IF_ERROR(RestoreTimestamps(message->GetDescriptor(), j, 0, ""));
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;
  // A string that is not UTF-8 cannot be printed for protobuf's reader (the
  // callers check their text first; this keeps a value built elsewhere from
  // ending dcuctl with an exception).
  std::string text;
  try {
    text = j.dump();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot be read: ", e.what()));
  }
  auto s = google::protobuf::util::JsonStringToMessage(text, message, o);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(s.message()), " (a ",
                                                   message->GetDescriptor()->name(), ")"));
  }
  return absl::OkStatus();
}

nlohmann::json ProtoToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, o);
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  ConvertTimestamps(message.GetDescriptor(), j, 0);
  return j;
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

absl::Status CheckOutputFormat(const std::string& format) {
  for (const char* f : {"table", "wide", "json", "yaml", "name"}) {
    if (format == f) return absl::OkStatus();
  }
  if (absl::StartsWith(format, "jsonpath=")) {
    auto t = JsonPathTemplate::Parse(format.substr(9));
    return t.ok() ? absl::OkStatus() : t.status();
  }
  if (format == "jsonpath") {
    return absl::InvalidArgumentError("-o jsonpath needs a template: -o jsonpath='{.items[*].spec.name}'");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown output format '", format, "' (use table, wide, json, yaml, name or jsonpath=TEMPLATE)"));
}

bool IsDocumentFormat(const std::string& format) {
  return format == "json" || format == "yaml" || absl::StartsWith(format, "jsonpath=");
}

int PrintDocument(const nlohmann::json& document, const std::string& format, std::ostream& out,
                  std::ostream& err) {
  if (absl::StartsWith(format, "jsonpath=")) {
    auto t = JsonPathTemplate::Parse(format.substr(9));
    absl::StatusOr<std::string> text = t.ok() ? t->Execute(document) : t.status();
    if (!text.ok()) {
      err << "error: " << text.status().message() << "\n";
      return 2;
    }
    out << *text << std::flush;
    return 0;
  }
  PrintStructured(document, format, out);
  return 0;
}

std::string Age(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  int64_t now = absl::ToUnixMillis(absl::Now());
  return common::HumanDuration(std::max<int64_t>(0, now - unix_ms));
}

std::string Ago(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  return absl::StrCat(Age(unix_ms), " ago");
}

std::string ShortenKeepingEnd(const std::string& line, size_t max) {
  if (line.size() <= max) return line;
  const size_t head = max / 3, tail = max - head - 5;
  return line.substr(0, head) + " ... " + line.substr(line.size() - tail);
}

std::string RemediationWords(const std::string& kind, const std::string& action) {
  return action.empty() || action == kind ? kind : kind + ": " + action;
}

}  // namespace dcu::dcuctl
