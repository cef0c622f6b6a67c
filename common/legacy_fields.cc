#include "common/legacy_fields.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/enum_names.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/unknown_field_set.h"

namespace dcu::common {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// The old string field `old_number` of `message_type` is now the enum field
// `new_field`; `parse` maps the old words to the enum's number.
struct LegacyField {
  absl::string_view message_type;
  int old_number;
  absl::string_view new_field;
  std::optional<int> (*parse)(absl::string_view);
};

std::optional<int> RuntimeKindNumber(absl::string_view s) {
  auto v = ParseRuntimeKind(s);
  return v ? std::optional<int>(*v) : std::nullopt;
}
std::optional<int> VerdictNumber(absl::string_view s) {
  auto v = ParseVerdictState(s);
  return v ? std::optional<int>(*v) : std::nullopt;
}
std::optional<int> SeverityNumber(absl::string_view s) {
  auto v = ParseFindingSeverity(s);
  return v ? std::optional<int>(*v) : std::nullopt;
}

constexpr LegacyField kLegacyFields[] = {
    {"dcufleet.v1.Finding", 1, "severity", SeverityNumber},
    {"dcufleet.v1.InstanceSpec", 6, "runtime_kind", RuntimeKindNumber},
    {"dcufleet.v1.InstanceStatus", 201, "runtime_kind", RuntimeKindNumber},
    {"dcufleet.v1.Plan", 3, "runtime_kind", RuntimeKindNumber},
    {"dcufleet.v1.Plan", 4, "verdict", VerdictNumber},
    {"dcufleet.v1.Attempt", 4, "runtime_kind", RuntimeKindNumber},
};

int UpgradeOne(Message* m) {
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  int converted = 0;
  if (!r->GetUnknownFields(*m).empty()) {
    for (const LegacyField& lf : kLegacyFields) {
      if (d->full_name() != lf.message_type) continue;
      UnknownFieldSet* unknown = r->MutableUnknownFields(m);
      const FieldDescriptor* target = d->FindFieldByName(std::string(lf.new_field));
      bool found = false;
      for (int i = 0; i < unknown->field_count(); ++i) {
        const UnknownField& u = unknown->field(i);
        if (u.number() != lf.old_number || u.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
        found = true;
        std::optional<int> value = lf.parse(u.length_delimited());
        if (target && value && r->GetEnumValue(*m, target) == 0) {
          r->SetEnumValue(m, target, *value);
        }
      }
      if (found) {
        unknown->DeleteByNumber(lf.old_number);
        ++converted;
      }
    }
  }
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(*m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_map()) continue;  // no map in these protos holds a legacy message
    if (f->is_repeated()) {
      for (int i = 0; i < r->FieldSize(*m, f); ++i) converted += UpgradeOne(r->MutableRepeatedMessage(m, f, i));
    } else {
      converted += UpgradeOne(r->MutableMessage(m, f));
    }
  }
  return converted;
}

}  // namespace

int UpgradeLegacyFields(Message* message) { return message ? UpgradeOne(message) : 0; }

}  // namespace dcu::common
