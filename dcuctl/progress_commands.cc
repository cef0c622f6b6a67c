#include "dcuctl/progress_commands.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "dcuctl/exit_codes.h"
#include "dcuctl/startup_view.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "modelkit/startup_progress.h"

namespace dcu::dcuctl {
namespace {

constexpr std::streamoff kMaxRead = std::streamoff{64} << 20;

// The top finding of the built-in rules, for a failed start-up.
std::string Diagnose(const std::string& text) {
  auto classifier = modelkit::BuiltInClassifier(modelkit::AllDiagnosisActions());
  if (!classifier.ok()) return "";
  auto result = classifier->Classify(modelkit::SplitLogLines(text, /*tail_lines=*/2000), {});
  if (result.findings_size() == 0) return "";
  return result.findings(0).failure_class();
}

}  // namespace

int RunProgressLog(const ProgressLogArgs& args, std::ostream& out, std::ostream& err) {
  if (args.output != "table" && args.output != "json") {
    err << "error: unknown output format '" << args.output << "' (use table or json)\n";
    return kExitUsage;
  }
  struct stat st;
  if (::stat(args.log_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    err << "error: log '" << args.log_path << "' is not a readable file\n";
    return kExitUsage;
  }
  std::ifstream in(args.log_path, std::ios::binary);
  if (!in) {
    err << "error: log '" << args.log_path << "' cannot be opened\n";
    return kExitUsage;
  }
  // A log of gigabytes: its end says where the start-up is.
  const bool cut = st.st_size > kMaxRead;
  if (cut) in.seekg(st.st_size - kMaxRead);
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    err << "error: log '" << args.log_path << "': read failed\n";
    return kExitUsage;
  }
  const std::string text = buffer.str();
  dcufleet::v1::StartupProgress p =
      modelkit::ParseStartupLog(text, {.starts_at_line = !cut, .keep_evidence = true});
  std::string diagnosis =
      p.phase() == dcufleet::v1::STARTUP_FAILED ? Diagnose(text) : std::string();
  if (args.output == "json") {
    nlohmann::json j = StartupToJson(p);
    if (!diagnosis.empty()) j["diagnosis"] = diagnosis;
    if (cut) j["read_from_byte"] = static_cast<int64_t>(st.st_size - kMaxRead);
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  RenderStartupTable(p, out);
  if (!diagnosis.empty()) out << "DIAGNOSIS  " << diagnosis << " (dcuctl diagnose --log for the details)\n";
  if (cut) out << "(read the last 64 MiB of the log; line numbers count from there)\n";
  return kExitOk;
}

}  // namespace dcu::dcuctl
