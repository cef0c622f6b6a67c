#include "agent/procscan/listen_ports.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace dcu::agent {
namespace {

constexpr int kMaxProblemsPerTable = 3;
// The kernel's TCP_LISTEN (include/net/tcp_states.h), as the table prints it.
constexpr absl::string_view kListenState = "0A";

bool ReadWhole(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

}  // namespace

void ParseSocketTable(absl::string_view text, absl::string_view source, std::set<int>* ports,
                      std::vector<std::string>* problems) {
  int line_number = 0, reported = 0;
  auto problem = [&](absl::string_view why) {
    if (reported++ < kMaxProblemsPerTable) {
      problems->push_back(absl::StrCat(source, " line ", line_number, ": ", why));
    }
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    // The header ("sl  local_address rem_address   st ...").
    if (line_number == 1 && absl::StartsWith(line, "sl")) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    // "0:", local "ADDR:PORT", remote "ADDR:PORT", state; the rest is not read.
    if (fields.size() < 4 || !absl::EndsWith(fields[0], ":")) {
      problem("not a socket entry (expected 'N: LOCAL REMOTE STATE ...')");
      continue;
    }
    if (fields[3] != kListenState) continue;
    const size_t colon = fields[1].rfind(':');
    uint32_t port = 0;
    if (colon == absl::string_view::npos || fields[1].size() - colon - 1 != 4 ||
        !absl::SimpleHexAtoi(fields[1].substr(colon + 1), &port)) {
      problem(absl::StrCat("local address '", fields[1].substr(0, 64),
                           "' is not ADDRESS:PORT in hex"));
      continue;
    }
    if (static_cast<int>(port) >= kLowestInstancePort) ports->insert(static_cast<int>(port));
  }
}

std::vector<int> ForeignListenPorts(const std::string& proc_net, const std::set<int>& own,
                                    std::vector<std::string>* problems) {
  std::set<int> ports;
  for (const char* table : {"tcp", "tcp6"}) {
    const std::string path = absl::StrCat(proc_net, "/", table);
    std::string text;
    if (!ReadWhole(path, &text)) {
      // A host without IPv6 has no tcp6; one without tcp cannot be read at all.
      if (absl::string_view(table) == "tcp") {
        problems->push_back(absl::StrCat(path, ": cannot be read; ports held by other services "
                                               "are not known to the controller"));
      }
      continue;
    }
    ParseSocketTable(text, path, &ports, problems);
  }
  std::vector<int> out;
  for (int p : ports) {
    if (own.count(p)) continue;
    if (static_cast<int>(out.size()) >= kMaxListenPortsReported) break;
    out.push_back(p);
  }
  return out;
}

}  // namespace dcu::agent
