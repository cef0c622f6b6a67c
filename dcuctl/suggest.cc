#include "dcuctl/suggest.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"

namespace dcu::dcuctl {

int EditDistance(const std::string& a, const std::string& b) {
  // Optimal string alignment: a swap of two neighbours ("gte" for "get") is
  // one slip, as are an insertion, a deletion and a substitution.
  std::vector<std::vector<int>> d(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

namespace {

const CLI::App* Find(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->check_name(word)) return sub;
  }
  return nullptr;
}

// The names (with aliases) a word may have meant, closest first.
std::vector<std::string> Closest(const CLI::App& app, const std::string& word) {
  std::vector<std::pair<int, std::string>> scored;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    int best = 1 << 20;
    std::vector<std::string> names = sub->get_aliases();
    names.push_back(sub->get_name());
    for (const auto& n : names) {
      int d = EditDistance(word, n);
      // A prefix ("dep" for "deployments") is as good as one slip.
      if (word.size() >= 2 && absl::StartsWith(n, word)) d = std::min(d, 1);
      best = std::min(best, d);
    }
    const int allowed = word.size() <= 3 ? 1 : 2;
    if (best <= allowed) scored.emplace_back(best, sub->get_name());
  }
  std::sort(scored.begin(), scored.end());
  // Only the closest: "nodez" is one slip from "nodes", two from "model".
  std::vector<std::string> out;
  for (const auto& [d, n] : scored) {
    if (d == scored.front().first) out.push_back(n);
  }
  return out;
}

}  // namespace

std::string UnknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  std::vector<std::string> path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w == "--") break;
    if (!w.empty() && w[0] == '-') {
      // An option: skip its value when it takes one and it is not "--x=v".
      if (w.find('=') == std::string::npos) {
        const CLI::Option* opt = nullptr;
        for (const CLI::App* a = at; a != nullptr && !opt; a = a->get_parent()) {
          opt = a->get_option_no_throw(w);
        }
        if (opt && opt->get_type_size() != 0 && i + 1 < args.size()) ++i;
      }
      continue;
    }
    if (at->get_subcommands([](const CLI::App*) { return true; }).empty()) break;  // an argument
    if (const CLI::App* sub = Find(*at, w)) {
      at = sub;
      path.push_back(sub->get_name());
      continue;
    }
    // A word where a command was expected. A command with positionals of its
    // own (diagnose --log FILE has none; deploy MODEL is a leaf) stops here.
    if (!at->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()) break;
    std::string where = path.empty() ? "dcuctl" : absl::StrCat("dcuctl ", absl::StrJoin(path, " "));
    std::string msg = absl::StrCat("unknown command '", w, "' for '", where, "'");
    std::vector<std::string> near = Closest(*at, w);
    if (!near.empty()) {
      std::vector<std::string> quoted;
      for (const auto& n : near) {
        quoted.push_back(absl::StrCat("'", path.empty() ? "" : absl::StrJoin(path, " ") + " ", n, "'"));
      }
      absl::StrAppend(&msg, "\nDid you mean ", absl::StrJoin(quoted, " or "), "?");
    }
    absl::StrAppend(&msg, "\nRun '", where, " --help' for the commands it has.");
    return msg;
  }
  return "";
}

}  // namespace dcu::dcuctl
