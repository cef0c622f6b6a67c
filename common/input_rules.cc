#include "common/input_rules.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/arch.h"
#include "common/enum_names.h"
#include "common/ids.h"
#include "common/status_util.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"

namespace dcu::common {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

std::string Field(absl::string_view prefix, absl::string_view name) {
  return prefix.empty() ? std::string(name) : absl::StrCat(prefix, ".", name);
}

bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// Instance ids: common/ids.h's rule, the one the agent's runtimes apply too.
absl::Status CheckInstanceId(absl::string_view field, absl::string_view id) {
  std::string why = InstanceIdProblem(id);
  return why.empty() ? absl::OkStatus() : Invalid(field, why);
}

// Generic bounds on everything an agent sends, walked by reflection so a new
// proto field is covered without touching this file.
struct Bounds {
  size_t max_string_bytes = 1 << 20;
  // Log tails fetched for dcuctl logs ride in one string.
  size_t max_payload_bytes = 12 << 20;
  int max_repeated = 65536;
  int max_depth = 16;
};

// Where CheckBounds is, as a chain on the stack: the dotted path is only
// spelled out for an error. (Spelling it for every field of every report
// was a malloc and a StrCat per field: with reflection, ~15% of the
// controller's CPU at 10,000 agents x 1 report/s, measured with perf.)
struct BoundsPath {
  const BoundsPath* parent = nullptr;
  absl::string_view name;
  int index = -1;  // an element of a repeated field
  std::string Spell() const {
    std::string out = parent ? parent->Spell() : "";
    if (!name.empty()) {
      if (!out.empty()) out.push_back('.');
      absl::StrAppend(&out, name);
    }
    if (index >= 0) absl::StrAppend(&out, "[", index, "]");
    return out;
  }
};

absl::Status CheckBounds(const Message& m, const BoundsPath& path, const Bounds& b, int depth) {
  if (depth > b.max_depth) return Invalid(path.Spell(), "nested too deeply");
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const BoundsPath here{&path, f->name()};
    if (f->is_repeated()) {
      int n = r->FieldSize(m, f);
      if (n > b.max_repeated) {
        return Invalid(here.Spell(), absl::StrCat("has ", n, " entries; at most ", b.max_repeated));
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        std::string scratch;
        for (int i = 0; i < n; ++i) {
          const std::string& s = r->GetRepeatedStringReference(m, f, i, &scratch);
          if (s.size() > b.max_string_bytes) {
            return Invalid(BoundsPath{&path, f->name(), i}.Spell(),
                           absl::StrCat("is ", s.size(), " bytes; at most ", b.max_string_bytes));
          }
        }
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        for (int i = 0; i < n; ++i) {
          DCU_RETURN_IF_ERROR(
              CheckBounds(r->GetRepeatedMessage(m, f, i), BoundsPath{&path, f->name(), i}, b, depth + 1));
        }
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      std::string scratch;
      const std::string& s = r->GetStringReference(m, f, &scratch);
      if (s.size() > b.max_string_bytes || s.size() > b.max_payload_bytes) {
        size_t limit = f->full_name() == "dcufleet.v1.CommandResult.payload_json" ? b.max_payload_bytes
                                                                                 : b.max_string_bytes;
        if (s.size() > limit) return Invalid(here.Spell(), absl::StrCat("is ", s.size(), " bytes; at most ", limit));
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      DCU_RETURN_IF_ERROR(CheckBounds(r->GetMessage(m, f), here, b, depth + 1));
    }
  }
  return absl::OkStatus();
}

// The deepest nesting a message of type `d` can have (the top message is
// 0), or -1 when the schema is recursive (any depth can be sent).
int SchemaDepth(const google::protobuf::Descriptor* d, std::set<const google::protobuf::Descriptor*>* on_path) {
  if (!on_path->insert(d).second) return -1;
  int deepest = 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const int below = SchemaDepth(f->message_type(), on_path);
    if (below < 0) {
      on_path->erase(d);
      return -1;
    }
    deepest = std::max(deepest, below + 1);
  }
  on_path->erase(d);
  return deepest;
}

// Whether CheckBounds could find anything in `m`. Not when its schema nests
// no deeper than the bound and it is smaller on the wire than both the
// string bound and the repeated-entries bound: a string is never longer
// than the message, and every entry of a repeated field takes at least a
// byte. That is every periodic report; the reflection walk (a quarter of
// the controller's CPU at 10,000 agents x 1/s, perf) is left for the rare
// large message. A recursive schema turns the shortcut off by itself.
bool BoundsCouldFail(const Message& m, const Bounds& b) {
  static const int kAgentMessageDepth = [] {
    std::set<const google::protobuf::Descriptor*> on_path;
    return SchemaDepth(dcufleet::v1::AgentMessage::descriptor(), &on_path);
  }();
  const int depth = m.GetDescriptor() == dcufleet::v1::AgentMessage::descriptor() ? kAgentMessageDepth : -1;
  if (depth < 0 || depth > b.max_depth) return true;
  const size_t limit = std::min<size_t>(b.max_string_bytes, static_cast<size_t>(b.max_repeated));
  return m.ByteSizeLong() > limit;
}

absl::Status CheckInstanceStatus(const dcufleet::v1::InstanceStatus& s, const std::string& field) {
  DCU_RETURN_IF_ERROR(CheckInstanceId(Field(field, "instance_id"), s.instance_id()));
  DCU_RETURN_IF_ERROR(CheckRange(Field(field, "port"), s.port(), 0, 65535));
  DCU_RETURN_IF_ERROR(CheckRange(Field(field, "pid"), s.pid(), 0, INT32_MAX));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckInventory(const dcufleet::v1::NodeInventory& inv, absl::string_view field) {
  auto f = [&](absl::string_view name) { return Field(field, name); };
  if (inv.devices_size() > kMaxDevicesPerNode) {
    return Invalid(f("devices"), absl::StrCat("has ", inv.devices_size(), " entries; a node has at most ",
                                              kMaxDevicesPerNode));
  }
  if (inv.models_size() > kMaxModelDirectoriesPerNode) {
    return Invalid(f("models"), absl::StrCat("has ", inv.models_size(), " entries; at most ",
                                             kMaxModelDirectoriesPerNode));
  }
  if (inv.environments_size() > kMaxEnvironmentsPerNode) {
    return Invalid(f("environments"), absl::StrCat("has ", inv.environments_size(),
                                                   " entries; at most ", kMaxEnvironmentsPerNode));
  }
  if (inv.foreign_listen_ports_size() > kMaxForeignListenPorts) {
    return Invalid(f("foreign_listen_ports"),
                   absl::StrCat("has ", inv.foreign_listen_ports_size(), " entries; at most ",
                                kMaxForeignListenPorts));
  }
  for (int i = 0; i < inv.foreign_listen_ports_size(); ++i) {
    // Ascending, as the scheduler searches it.
    const std::string at = absl::StrCat(f("foreign_listen_ports"), "[", i, "]");
    const int low = i == 0 ? 1024 : inv.foreign_listen_ports(i - 1) + 1;
    if (low > 65535) return Invalid(at, "follows port 65535");
    DCU_RETURN_IF_ERROR(CheckRange(at, inv.foreign_listen_ports(i), low, 65535));
  }
  DCU_RETURN_IF_ERROR(CheckText(f("hostname"), inv.hostname(), 256));
  DCU_RETURN_IF_ERROR(CheckText(f("kernel_release"), inv.kernel_release(), 256));
  DCU_RETURN_IF_ERROR(CheckText(f("driver_version"), inv.driver_version(), 256));
  if (inv.has_allocation()) {
    // Shown by dcuctl and matched by people: the batch job's names.
    const auto& a = inv.allocation();
    auto af = [&](absl::string_view name) { return Field(f("allocation"), name); };
    DCU_RETURN_IF_ERROR(CheckText(af("scheduler"), a.scheduler(), 32));
    DCU_RETURN_IF_ERROR(CheckText(af("job_id"), a.job_id(), 128));
    DCU_RETURN_IF_ERROR(CheckText(af("partition"), a.partition(), 128));
    DCU_RETURN_IF_ERROR(CheckText(af("scheduler_node"), a.scheduler_node(), 128));
    DCU_RETURN_IF_ERROR(CheckText(af("cluster"), a.cluster(), 128));
    DCU_RETURN_IF_ERROR(CheckText(af("devices_from"), a.devices_from(), 64));
    DCU_RETURN_IF_ERROR(CheckRange(af("end_time_ms"), a.end_time_ms(), 0, INT64_MAX));
    if (a.device_indices_size() > kMaxDevicesPerNode) {
      return Invalid(af("device_indices"), absl::StrCat("has ", a.device_indices_size(), " entries; at most ",
                                                        kMaxDevicesPerNode));
    }
  }
  for (int i = 0; i < inv.devices_size(); ++i) {
    const auto& d = inv.devices(i);
    std::string dev = absl::StrCat(f("devices"), "[", i, "]");
    auto df = [&](absl::string_view name) { return Field(dev, name); };
    if (!d.arch().empty()) {
      if (absl::Status a = ValidateArch(d.arch()); !a.ok()) {
        return Invalid(df("arch"), absl::StrCat(Preview(d.arch()), " is not an accelerator ISA name (",
                                                a.message(), ")"));
      }
    }
    DCU_RETURN_IF_ERROR(CheckText(df("vendor"), d.vendor(), 128));
    DCU_RETURN_IF_ERROR(CheckText(df("product_name"), d.product_name(), 256));
    DCU_RETURN_IF_ERROR(CheckText(df("arch_source"), d.arch_source(), 128));
    DCU_RETURN_IF_ERROR(CheckText(df("unique_id"), d.unique_id(), 256));
    DCU_RETURN_IF_ERROR(CheckText(df("pci_bus"), d.pci_bus(), 64));
    if (d.holders_size() > kMaxHoldersPerDevice) {
      return Invalid(df("holders"), absl::StrCat("has ", d.holders_size(), " entries; at most ",
                                                 kMaxHoldersPerDevice));
    }
  }
  return absl::OkStatus();
}

std::string Preview(absl::string_view value, size_t max_chars) {
  if (value.size() <= max_chars) return absl::CHexEscape(value);
  return absl::StrCat(absl::CHexEscape(value.substr(0, max_chars)), "...");
}

absl::Status CheckName(absl::string_view field, absl::string_view value) {
  std::string why = ValidateName(field, value);
  return why.empty() ? absl::OkStatus() : absl::InvalidArgumentError(why);
}

absl::Status CheckOptionalName(absl::string_view field, absl::string_view value) {
  return value.empty() ? absl::OkStatus() : CheckName(field, value);
}

absl::Status CheckEnvName(absl::string_view field, absl::string_view name) {
  if (name.empty()) return Invalid(field, "environment variable name is empty");
  if (name.size() > 128) {
    return Invalid(field, absl::StrCat("environment variable name is ", name.size(),
                                       " characters long; at most 128"));
  }
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) {
    return Invalid(field, absl::StrCat("environment variable name '", Preview(name),
                                       "' starts with a digit"));
  }
  for (char c : name) {
    if (!IsAlnum(c) && c != '_') {
      return Invalid(field, absl::StrCat("environment variable name '", Preview(name),
                                         "' contains '", Preview(absl::string_view(&c, 1)),
                                         "'; only A-Z, a-z, 0-9 and '_' are allowed"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckText(absl::string_view field, absl::string_view value, size_t max_bytes) {
  if (value.size() > max_bytes) {
    return Invalid(field, absl::StrCat("is ", value.size(), " bytes long; at most ", max_bytes));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == 0) return Invalid(field, absl::StrCat("contains a NUL byte at offset ", i));
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return Invalid(field, absl::StrCat("contains control character ",
                                         Preview(value.substr(i, 1)), " at offset ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckServedModelName(absl::string_view field, absl::string_view value) {
  if (value.empty()) return absl::OkStatus();
  if (value.size() > 128) {
    return Invalid(field, absl::StrCat("is ", value.size(), " characters long; at most 128"));
  }
  if (!IsAlnum(value[0])) return Invalid(field, "must start with a letter or digit");
  for (char c : value) {
    if (!IsAlnum(c) && c != '.' && c != '_' && c != '-' && c != ':' && c != '/') {
      return Invalid(field, absl::StrCat("contains '", Preview(absl::string_view(&c, 1)),
                                         "'; only A-Z, a-z, 0-9, '.', '_', '-', ':' and '/' "
                                         "are allowed"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAbsolutePath(absl::string_view field, absl::string_view value, bool optional) {
  if (value.empty()) return optional ? absl::OkStatus() : Invalid(field, "must not be empty");
  if (value.size() > 4095) {
    return Invalid(field, absl::StrCat("is ", value.size(), " bytes long; at most 4095"));
  }
  if (value[0] != '/') return Invalid(field, absl::StrCat("'", Preview(value), "' is not an absolute path"));
  for (char c : value) {
    if (c == '\0' || c == '\n' || c == '\r') return Invalid(field, "contains a NUL byte or a line break");
    if (c == ':' || c == ',') {
      // docker -v SRC:DST:ro and LD_LIBRARY_PATH are ':' separated.
      return Invalid(field, absl::StrCat("'", Preview(value), "' contains '", std::string(1, c),
                                         "', which is not allowed in paths dcufleet passes on"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    return Invalid(field, absl::StrCat(value, " is outside ", lo, "-", hi));
  }
  return absl::OkStatus();
}

// ValidateDeploymentSpec is in common/deployment_rules.cc, next to the table
// of numbers it checks.

absl::Status ValidateInstanceSpec(const dcufleet::v1::InstanceSpec& spec, absl::string_view prefix) {
  auto f = [&](absl::string_view name) { return Field(prefix, name); };
  DCU_RETURN_IF_ERROR(CheckInstanceId(f("instance_id"), spec.instance_id()));
  DCU_RETURN_IF_ERROR(CheckOptionalName(f("deployment"), spec.deployment()));
  DCU_RETURN_IF_ERROR(CheckOptionalName(f("model"), spec.model()));
  DCU_RETURN_IF_ERROR(CheckOptionalName(f("stack_id"), spec.stack_id()));
  DCU_RETURN_IF_ERROR(CheckAbsolutePath(f("model_path"), spec.model_path(), /*optional=*/true));
  // The kind decides how the agent runs it: never guessed (an unspecified
  // kind is not "bare").
  if (!ParseRuntimeKind(RuntimeKindName(spec.runtime_kind()))) {
    return Invalid(f("runtime_kind"), absl::StrCat(RuntimeKindName(spec.runtime_kind()), " (",
                                                   static_cast<int>(spec.runtime_kind()),
                                                   ") must be ", RuntimeKindChoices()));
  }
  if (spec.runtime_kind() == dcufleet::v1::RUNTIME_CONTAINER) {
    // An image reference; passed to docker as one argv element, so it must not
    // look like an option.
    const std::string& image = spec.runtime_location();
    DCU_RETURN_IF_ERROR(CheckText(f("runtime_location"), image, 512));
    if (image.empty() || image[0] == '-' || image.find_first_of(" \t") != std::string::npos) {
      return Invalid(f("runtime_location"),
                     absl::StrCat("image reference '", Preview(image),
                                  "' must be non-empty, without spaces, and not start with '-'"));
    }
  } else {
    DCU_RETURN_IF_ERROR(CheckAbsolutePath(f("runtime_location"), spec.runtime_location(), true));
  }
  std::set<int> seen;
  for (int i = 0; i < spec.device_indices_size(); ++i) {
    std::string name = absl::StrCat(f("device_indices"), "[", i, "]");
    DCU_RETURN_IF_ERROR(CheckRange(name, spec.device_indices(i), 0, 255));
    if (!seen.insert(spec.device_indices(i)).second) return Invalid(name, "repeats a device");
  }
  if (spec.port() != 0) DCU_RETURN_IF_ERROR(CheckRange(f("port"), spec.port(), 1, 65535));
  if (spec.argv_size() > 1024) return Invalid(f("argv"), absl::StrCat("has ", spec.argv_size(), " elements; at most 1024"));
  for (int i = 0; i < spec.argv_size(); ++i) {
    const std::string& a = spec.argv(i);
    std::string name = absl::StrCat(f("argv"), "[", i, "]");
    if (a.size() > 65536) return Invalid(name, absl::StrCat("is ", a.size(), " bytes; at most 65536"));
    if (a.find('\0') != std::string::npos) return Invalid(name, "contains a NUL byte");
  }
  if (spec.argv_size() > 0 && spec.argv(0).empty()) return Invalid(absl::StrCat(f("argv"), "[0]"), "is empty");
  if (spec.env_size() > 1024) return Invalid(f("env"), absl::StrCat("has ", spec.env_size(), " entries; at most 1024"));
  for (const auto& [k, v] : spec.env()) {
    DCU_RETURN_IF_ERROR(CheckEnvName(absl::StrCat(f("env"), "[", Preview(k), "]"), k));
    if (v.size() > 65536 || v.find('\0') != std::string::npos) {
      return Invalid(absl::StrCat(f("env"), "[", k, "]"), "value is longer than 65536 bytes or holds a NUL byte");
    }
  }
  for (int i = 0; i < spec.ld_library_path_prefix_size(); ++i) {
    DCU_RETURN_IF_ERROR(CheckAbsolutePath(absl::StrCat(f("ld_library_path_prefix"), "[", i, "]"),
                                          spec.ld_library_path_prefix(i), false));
  }
  for (int i = 0; i < spec.source_scripts_size(); ++i) {
    DCU_RETURN_IF_ERROR(CheckAbsolutePath(absl::StrCat(f("source_scripts"), "[", i, "]"),
                                          spec.source_scripts(i), false));
  }
  DCU_RETURN_IF_ERROR(CheckRange(f("startup_timeout_s"), spec.startup_timeout_s(), 0, 7 * 86400));
  DCU_RETURN_IF_ERROR(CheckServedModelName(f("served_model_name"), spec.served_model_name()));
  DCU_RETURN_IF_ERROR(CheckRange(f("attempt"), spec.attempt(), 0, 1000000));
  if (!spec.visible_devices_env().empty()) {
    DCU_RETURN_IF_ERROR(CheckEnvName(f("visible_devices_env"), spec.visible_devices_env()));
  }
  DCU_RETURN_IF_ERROR(CheckAbsolutePath(f("overlay_dir"), spec.overlay_dir(), true));
  DCU_RETURN_IF_ERROR(CheckAbsolutePath(f("overlay_source_dir"), spec.overlay_source_dir(), true));
  if (spec.overlay_config_json().size() > (1 << 20)) {
    return Invalid(f("overlay_config_json"), "is larger than 1 MiB");
  }
  DCU_RETURN_IF_ERROR(CheckRange(f("stop_grace_s"), spec.stop_grace_s(), 0, 3600));
  if (!spec.shm_size().empty()) {
    const std::string& s = spec.shm_size();
    bool ok = s.size() <= 16 && absl::ascii_isdigit(static_cast<unsigned char>(s[0]));
    for (size_t i = 0; ok && i < s.size(); ++i) {
      char c = s[i];
      bool last = i + 1 == s.size();
      ok = absl::ascii_isdigit(static_cast<unsigned char>(c)) ||
           (last && std::string("bkmgBKMG").find(c) != std::string::npos);
    }
    if (!ok) return Invalid(f("shm_size"), absl::StrCat("'", Preview(s), "' is not a size like '16g'"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAssignment(const dcufleet::v1::Assignment& assignment) {
  DCU_RETURN_IF_ERROR(CheckRange("assignment.generation", assignment.generation(), 0, INT64_MAX));
  if (assignment.instances_size() > 1024) {
    return Invalid("assignment.instances", absl::StrCat("has ", assignment.instances_size(), " entries; at most 1024"));
  }
  std::set<std::string> ids;
  for (int i = 0; i < assignment.instances_size(); ++i) {
    std::string prefix = absl::StrCat("assignment.instances[", i, "]");
    DCU_RETURN_IF_ERROR(ValidateInstanceSpec(assignment.instances(i), prefix));
    if (!ids.insert(assignment.instances(i).instance_id()).second) {
      return Invalid(absl::StrCat(prefix, ".instance_id"), "repeats another instance's id");
    }
  }
  return absl::OkStatus();
}

namespace {
// A DNS name or an IPv4/IPv6 literal: 1-253 of [A-Za-z0-9.:-], not
// starting with '-' (it would read as an option in argv).
bool IsHostText(absl::string_view s) {
  if (s.empty() || s.size() > 253 || s[0] == '-') return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':')) {
      return false;
    }
  }
  return true;
}
}  // namespace

absl::Status ValidateAgentMessage(const dcufleet::v1::AgentMessage& message) {
  if (const Bounds bounds; BoundsCouldFail(message, bounds)) {
    DCU_RETURN_IF_ERROR(CheckBounds(message, BoundsPath{}, bounds, 0));
  }
  switch (message.body_case()) {
    case dcufleet::v1::AgentMessage::kHello: {
      const auto& h = message.hello();
      DCU_RETURN_IF_ERROR(CheckName("hello.node_name", h.node_name()));
      DCU_RETURN_IF_ERROR(CheckText("hello.agent_version", h.agent_version(), 128));
      if (!h.advertise_address().empty() && !IsHostText(h.advertise_address())) {
        // It becomes the host of every endpoint the gateway dials.
        return Invalid("hello.advertise_address",
                       absl::StrCat("'", Preview(h.advertise_address()),
                                    "' is not a host name or IP address"));
      }
      if (h.capabilities_size() > 64) return Invalid("hello.capabilities", "more than 64 entries");
      for (int i = 0; i < h.capabilities_size(); ++i) {
        DCU_RETURN_IF_ERROR(CheckText(absl::StrCat("hello.capabilities[", i, "]"), h.capabilities(i), 64));
      }
      DCU_RETURN_IF_ERROR(CheckInventory(h.inventory(), "hello.inventory"));
      if (h.instances_size() > kMaxInstancesPerNode) {
        return Invalid("hello.instances", absl::StrCat("has ", h.instances_size(), " entries; at most ",
                                                       kMaxInstancesPerNode));
      }
      for (int i = 0; i < h.instances_size(); ++i) {
        DCU_RETURN_IF_ERROR(CheckInstanceStatus(h.instances(i), absl::StrCat("hello.instances[", i, "]")));
      }
      DCU_RETURN_IF_ERROR(CheckRange("hello.applied_generation", h.applied_generation(), 0, INT64_MAX));
      break;
    }
    case dcufleet::v1::AgentMessage::kStatus: {
      const auto& s = message.status();
      if (s.has_inventory()) DCU_RETURN_IF_ERROR(CheckInventory(s.inventory(), "status.inventory"));
      // A digest-only report's moving figures (issue 22): bounded like the
      // inventory they stand in for.
      if (s.device_memory_size() > kMaxDevicesPerNode) {
        return Invalid("status.device_memory", absl::StrCat("has ", s.device_memory_size(),
                                                            " entries; a node has at most ",
                                                            kMaxDevicesPerNode));
      }
      if (s.figures().index_size() > kMaxDevicesPerNode) {
        return Invalid("status.figures.index", absl::StrCat("has ", s.figures().index_size(),
                                                            " entries; a node has at most ", kMaxDevicesPerNode));
      }
      if (s.figures().sources_size() > kMaxDevicesPerNode * 8) {
        return Invalid("status.figures.sources", absl::StrCat("has ", s.figures().sources_size(),
                                                              " entries; at most ", kMaxDevicesPerNode * 8));
      }
      if (s.probe_log_size() > 256) {
        return Invalid("status.probe_log", absl::StrCat("has ", s.probe_log_size(), " entries; at most 256"));
      }
      if (s.instances_size() > kMaxInstancesPerNode) {
        return Invalid("status.instances", absl::StrCat("has ", s.instances_size(), " entries; at most ",
                                                        kMaxInstancesPerNode));
      }
      for (int i = 0; i < s.instances_size(); ++i) {
        DCU_RETURN_IF_ERROR(CheckInstanceStatus(s.instances(i), absl::StrCat("status.instances[", i, "]")));
      }
      DCU_RETURN_IF_ERROR(CheckRange("status.applied_generation", s.applied_generation(), 0, INT64_MAX));
      break;
    }
    case dcufleet::v1::AgentMessage::kInstanceEvent:
      DCU_RETURN_IF_ERROR(CheckInstanceStatus(message.instance_event().status(), "instance_event.status"));
      if (message.instance_event().reason().size() > 65536) {
        return Invalid("instance_event.reason", "is longer than 65536 bytes");
      }
      break;
    case dcufleet::v1::AgentMessage::kCommandResult:
      DCU_RETURN_IF_ERROR(CheckText("command_result.command_id", message.command_result().command_id(), 128));
      break;
    case dcufleet::v1::AgentMessage::kGoodbye:
      DCU_RETURN_IF_ERROR(CheckText("goodbye.reason", message.goodbye().reason(), 1024));
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

}  // namespace dcu::common
