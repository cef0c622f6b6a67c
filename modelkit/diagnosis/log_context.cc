#include "modelkit/diagnosis/log_context.h"

#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "re2/re2.h"

namespace dcu::modelkit {
namespace {

// Where each wording comes from (a line of the corpus that has it):
// vLLM's api_server "vLLM API server version 0.8.5.post1" and its engine's
// "Initializing a V1 LLM engine (v0.9.2) with config" / "Initializing an
// LLM engine (v0.4.2)", "Automatically detected platform rocm." (vllm
// platforms/__init__.py); llama.cpp's "build: 3923 (becfd387) with cc ..."
// and "ggml_cuda_init: found 1 ROCm devices:" then "Device 0: AMD Radeon
// ..., gfx1100 (0x1100)" or "Device 0: NVIDIA GeForce RTX 3090, compute
// capability 8.6"; vLLM's bf16 refusal "Your Tesla T4 GPU has compute
// capability 7.5"; "ollama version is 0.3.11"; rocBLAS's "Cannot read
// .../TensileLibrary.dat: ... for GPU arch : gfx1032"; PyTorch's "NVIDIA
// GeForce RTX 5090 with CUDA capability sm_120 is not compatible".
// Every capture is bounded and ASCII: a hostile log cannot put a megabyte,
// or bytes that are not UTF-8, into a diagnosis that is stored and shown.
const std::vector<ContextPattern>& Patterns() {
  static const auto* patterns = new std::vector<ContextPattern>{
      {ContextKind::kEngineVersion, "vllm", R"(vLLM API server version ([0-9][0-9A-Za-z.+_-]{0,63}))"},
      {ContextKind::kEngineVersion, "vllm", R"(Initializing an? (?:V1 )?LLM engine \(v([0-9][0-9A-Za-z.+_-]{0,63})\))"},
      {ContextKind::kEngineVersion, "llama.cpp", R"(^build: ([0-9]{1,9} \([0-9a-f]{1,40}\)))"},
      {ContextKind::kEngineVersion, "ollama", R"(ollama version is ([0-9][0-9A-Za-z.+_-]{0,63}))"},
      {ContextKind::kPlatform, "vllm", R"(Automatically detected platform ([A-Za-z]{1,16}))"},
      {ContextKind::kPlatform, "llama.cpp", R"(ggml_cuda_init: found [0-9]+ (ROCm|CUDA|MUSA) devices)"},
      {ContextKind::kDeviceArch, nullptr, R"(Device [0-9]+: [^,]+, (gfx[0-9a-f]{3,4}[a-z]?)\b)"},
      {ContextKind::kDeviceArch, nullptr, R"(for GPU arch ?: ?(gfx[0-9a-f]{3,4}[a-z]?)\b)"},
      {ContextKind::kDeviceArch, nullptr, R"(gcnArchName\W{0,4}(gfx[0-9a-f]{3,4}[a-z]?)\b)"},
      {ContextKind::kDeviceArch, nullptr, R"(with CUDA capability (sm_[0-9]{2,3}a?)\b)"},
      // Only where the device is the subject ("Your Tesla T4 GPU has compute
      // capability 7.5"), not a requirement ("at least 8.0").
      {ContextKind::kComputeCapability, nullptr,
       R"((?:Device [0-9]+: [^,]+, |GPU has )compute capability ([0-9]{1,2})\.([0-9]))"},
      {ContextKind::kMentionedArch, nullptr, R"(\b(gfx[0-9a-f]{3,4}[a-z]?|sm_[0-9]{2,3}a?)\b)"},
  };
  return *patterns;
}

const std::vector<std::unique_ptr<RE2>>& Compiled() {
  static const auto* compiled = [] {
    auto* out = new std::vector<std::unique_ptr<RE2>>;
    RE2::Options options;
    options.set_log_errors(false);
    for (const ContextPattern& p : Patterns()) out->push_back(std::make_unique<RE2>(p.pattern, options));
    return out;
  }();
  return *compiled;
}

bool NamesAnAmdDevice(const std::string& text) {
  return absl::StrContains(text, "Radeon") || absl::StrContains(text, "AMD") ||
         absl::StrContains(text, "Instinct");
}

// A line naming two different archs lists targets; it says nothing of the
// device.
bool NamesOneArch(const RE2& re, const std::string& text) {
  re2::StringPiece input(text);
  std::string first, arch;
  while (RE2::FindAndConsume(&input, re, &arch)) {
    if (first.empty()) {
      first = arch;
    } else if (arch != first) {
      return false;
    }
  }
  return !first.empty();
}

}  // namespace

const std::vector<ContextPattern>& LogContextPatterns() { return Patterns(); }

dcufleet::v1::LogContext ReadLogContext(const std::vector<NormalizedLine>& lines,
                                        const std::vector<std::vector<int>>& hits,
                                        const LogStructure& structure) {
  dcufleet::v1::LogContext out;
  const auto& patterns = Patterns();
  const auto& compiled = Compiled();
  // The arch, by how much its line says about the device: 0 a device
  // statement, 1 the terminal error, 2 an error line, 3 any other line;
  // 4 none yet.
  int arch_rank = 4;
  auto offer_arch = [&](int rank, int line, std::string arch) {
    if (rank < arch_rank || (rank == arch_rank && line + 1 < out.arch_line())) {
      arch_rank = rank;
      out.set_arch(std::move(arch));
      out.set_arch_line(line + 1);
    }
  };
  const size_t n = std::min(hits.size(), patterns.size());
  for (size_t k = 0; k < n; ++k) {
    const ContextPattern& p = patterns[k];
    const RE2& re = *compiled[k];
    for (int line : hits[k]) {
      if (line < 0 || static_cast<size_t>(line) >= lines.size()) continue;
      const std::string& text = lines[line].text;
      std::string a, b;
      switch (p.kind) {
        case ContextKind::kEngineVersion:
          if (out.engine_line() != 0 && out.engine_line() <= line + 1) break;
          if (!RE2::PartialMatch(text, re, &a)) break;
          out.set_engine(p.engine);
          out.set_engine_version(a);
          out.set_engine_line(line + 1);
          break;
        case ContextKind::kPlatform:
          // A platform line only one engine prints names that engine too,
          // when its version line was cut from the excerpt.
          if (out.platform_line() != 0 && out.platform_line() <= line + 1) break;
          if (!RE2::PartialMatch(text, re, &a)) break;
          out.set_platform(absl::AsciiStrToLower(a));
          out.set_platform_line(line + 1);
          if (out.engine().empty() && p.engine != nullptr) {
            out.set_engine(p.engine);
            out.set_engine_line(line + 1);
          }
          break;
        case ContextKind::kDeviceArch:
          if (RE2::PartialMatch(text, re, &a)) offer_arch(0, line, a);
          break;
        case ContextKind::kComputeCapability:
          if (NamesAnAmdDevice(text)) break;
          if (RE2::PartialMatch(text, re, &a, &b)) offer_arch(0, line, absl::StrCat("sm_", a, b));
          break;
        case ContextKind::kMentionedArch: {
          const int error = line < static_cast<int>(structure.error_of_line.size())
                                ? structure.error_of_line[line]
                                : -1;
          int rank;
          if (error >= 0 && error == structure.terminal_error) {
            rank = 1;
          } else if (lines[line].exception || lines[line].severity == LineSeverity::kError ||
                     error >= 0) {
            rank = 2;
          } else {
            // Any other line ("unsupported target: 'gfx928'" printed by a
            // compiler without a level): the last resort.
            rank = 3;
          }
          if (rank > arch_rank || !NamesOneArch(re, text)) break;
          if (RE2::PartialMatch(text, re, &a)) offer_arch(rank, line, a);
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace dcu::modelkit
