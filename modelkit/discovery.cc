#include "modelkit/discovery.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/enum_names.h"
#include "modelkit/config_audit.h"
#include "modelkit/names.h"

namespace dcu::modelkit {
namespace {

using dcufleet::v1::RuntimeEnvironment;
using dcufleet::v1::Stack;

std::string Version(const RuntimeEnvironment& env, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = env.package_versions().find(k);
    if (it != env.package_versions().end() && !it->second.empty()) return it->second;
  }
  return "";
}

std::string EngineOf(const RuntimeEnvironment& env, std::string* version) {
  for (const char* engine : {"vllm", "sglang"}) {
    std::string v = Version(env, {engine});
    if (!v.empty()) {
      *version = v;
      return engine;
    }
  }
  return "";
}

// Lower-case, [a-z0-9._-] only, at most 24 chars.
std::string IdPart(absl::string_view s) {
  std::string out;
  for (char c : absl::AsciiStrToLower(s)) {
    out.push_back(absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_' ? c : '-');
    if (out.size() >= 24) break;
  }
  return out.empty() ? "x" : out;
}

// "0.9.2+das.opt1.dtk2504" -> "0.9.2": vendor builds add a local suffix.
std::string BaseVersion(const std::string& v) { return v.substr(0, v.find('+')); }

}  // namespace

const Stack* MatchEnvironment(const std::vector<Stack>& stacks, const RuntimeEnvironment& env) {
  auto kind = common::ParseRuntimeKind(env.kind()).value_or(dcufleet::v1::RUNTIME_KIND_UNSPECIFIED);
  for (const auto& s : stacks) {
    if (s.runtime_kind() == kind && s.runtime_location() == env.location()) return &s;
  }
  std::string version;
  std::string engine = EngineOf(env, &version);
  if (engine.empty()) return nullptr;
  std::string torch = Version(env, {"torch"});
  std::string triton = Version(env, {"triton", "pytorch-triton-rocm"});
  for (const auto& s : stacks) {
    if (s.runtime_kind() != kind || s.engine() != engine ||
        BaseVersion(s.engine_version()) != BaseVersion(version)) {
      continue;
    }
    if (torch.empty() || triton.empty()) continue;
    if (BaseVersion(s.torch_version()) == BaseVersion(torch) &&
        BaseVersion(s.triton_version()) == BaseVersion(triton)) {
      return &s;
    }
  }
  return nullptr;
}

absl::StatusOr<Stack> StackFromEnvironment(const RuntimeEnvironment& env, absl::string_view node,
                                           int64_t now_ms) {
  auto kind = common::ParseRuntimeKind(env.kind()).value_or(dcufleet::v1::RUNTIME_KIND_UNSPECIFIED);
  if (kind == dcufleet::v1::RUNTIME_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment kind '", env.kind(), "' is neither 'bare' nor 'container'"));
  }
  if (env.location().empty()) {
    return absl::InvalidArgumentError("environment has no location");
  }
  if (kind == dcufleet::v1::RUNTIME_BARE && env.location()[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("bare environment location '", env.location(), "' is not absolute"));
  }
  std::string version;
  std::string engine = EngineOf(env, &version);
  if (engine.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no engine (vllm, sglang) in environment '",
                                                   env.location(), "'"));
  }
  bool bare = kind == dcufleet::v1::RUNTIME_BARE;
  Stack s;
  s.set_id(absl::StrCat("disc-", engine, "-", IdPart(version), bare ? "-bare-" : "-image-",
                        common::Sha256Hex(absl::StrCat(env.kind(), "\n", env.location())).substr(0, 8)));
  s.set_display_name(absl::StrCat(engine, " ", version, " (discovered on ", node, ")"));
  s.set_engine(engine);
  s.set_engine_version(version);
  s.set_runtime_kind(kind);
  s.set_runtime_location(env.location());
  s.set_torch_version(Version(env, {"torch"}));
  s.set_triton_version(Version(env, {"triton", "pytorch-triton-rocm"}));
  s.set_flash_attn_version(Version(env, {"flash_attn", "flash-attn"}));
  s.set_python_version(Version(env, {"python"}));
  s.set_dtk_version(Version(env, {"dtk", "rocm"}));
  *s.mutable_package_versions() = env.package_versions();
  s.set_origin(absl::StrCat("discovered:", node));
  s.set_note("registered from discovery; untested until evidence says otherwise");
  const char* python = bare ? "{python}" : "python3";
  if (engine == "vllm") {
    for (const char* a :
         {python, "-m", "vllm.entrypoints.openai.api_server", "--model", "{model_path}",
          "--served-model-name", "{served_name}", "--host", "{host}", "--port", "{port}",
          "--tensor-parallel-size", "{tp}", "--max-model-len", "{max_model_len}",
          "--gpu-memory-utilization", "{gpu_memory_utilization}"}) {
      s.add_argv_template(a);
    }
  } else {
    for (const char* a : {python, "-m", "sglang.launch_server", "--model-path", "{model_path}",
                          "--served-model-name", "{served_name}", "--host", "{host}", "--port",
                          "{port}", "--tp", "{tp}", "--context-length", "{max_model_len}"}) {
      s.add_argv_template(a);
    }
  }
  s.mutable_capabilities()->set_accepts_served_model_name(true);
  s.set_created_at_ms(now_ms);
  s.set_updated_at_ms(now_ms);
  return s;
}

}  // namespace dcu::modelkit
