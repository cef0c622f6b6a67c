#include "dcuctl/config_commands.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/net.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"

namespace dcu::dcuctl {
namespace {

// Loads the config, or prints why not (exit code in *rc).
bool Load(const ConfigLocation& where, ClientConfig* config, std::ostream& err, int* rc) {
  auto c = LoadConfig(where.path);
  if (!c.ok()) {
    err << "error: " << c.status().message() << "\n";
    *rc = kExitUsage;
    return false;
  }
  *config = *std::move(c);
  return true;
}

int Save(const ConfigLocation& where, const ClientConfig& config, std::ostream& err) {
  absl::Status s = SaveConfig(where.path, config);
  if (!s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

std::string Names(const ClientConfig& config) {
  std::vector<std::string> names;
  for (const auto& c : config.contexts) names.push_back(c.name);
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

int NoSuchContext(const ConfigLocation& where, const ClientConfig& config, const std::string& name,
                  std::ostream& err) {
  err << "error: no context '" << name << "' in " << where.path << " (it has: " << Names(config)
      << "); add it with dcuctl config set-context " << name << " --controller HOST:PORT\n";
  return kExitNotFound;
}

std::string Auth(const Context& c) {
  if (c.ca.empty()) return c.token_file.empty() ? "plaintext" : "token without TLS (refused)";
  if (!c.token_file.empty()) return "TLS + token";
  if (!c.cert.empty()) return "TLS + certificate";
  return "TLS";
}

std::string Absolute(const std::string& p) {
  if (p.empty() || p.front() == '/') return p;
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  return ec ? p : abs.lexically_normal().string();
}

}  // namespace

int RunGetContexts(const ConfigLocation& where, std::ostream& out, std::ostream& err) {
  ClientConfig config;
  int rc = kExitOk;
  if (!Load(where, &config, err, &rc)) return rc;
  if (config.contexts.empty()) {
    err << "No contexts in " << where.path
        << ". Add one with: dcuctl config set-context NAME --controller HOST:PORT\n";
    return kExitOk;
  }
  Table t({"CURRENT", "NAME", "CONTROLLER", "AUTH"});
  for (const auto& c : config.contexts) {
    t.AddRow({c.name == config.current_context ? "*" : "", c.name,
              c.controller.empty() ? "-" : c.controller, Auth(c)});
  }
  t.Print(out);
  return kExitOk;
}

int RunCurrentContext(const ConfigLocation& where, std::ostream& out, std::ostream& err) {
  ClientConfig config;
  int rc = kExitOk;
  if (!Load(where, &config, err, &rc)) return rc;
  if (config.current_context.empty()) {
    err << "error: current-context is not set in " << where.path
        << " (set it with dcuctl config use-context NAME)\n";
    return kExitNotFound;
  }
  out << config.current_context << "\n";
  return kExitOk;
}

int RunUseContext(const ConfigLocation& where, const std::string& name, std::ostream& out,
                  std::ostream& err) {
  ClientConfig config;
  int rc = kExitOk;
  if (!Load(where, &config, err, &rc)) return rc;
  if (!config.Find(name)) return NoSuchContext(where, config, name, err);
  config.current_context = name;
  if (int s = Save(where, config, err); s != kExitOk) return s;
  out << "Switched to context '" << name << "'.\n";
  return kExitOk;
}

int RunSetContext(const ConfigLocation& where, const SetContextArgs& args, std::ostream& out,
                  std::ostream& err) {
  if (absl::Status s = CheckContextName(args.name); !s.ok()) {
    err << "error: " << s.message() << "\n";
    return kExitUsage;
  }
  if (!args.controller.empty() && args.controller.rfind("unix:", 0) != 0) {
    auto hp = common::ParseHostPort(args.controller);
    if (!hp.ok()) {
      err << "error: --controller '" << args.controller << "' is not HOST:PORT ("
          << hp.status().message() << ")\n";
      return kExitUsage;
    }
  }
  ClientConfig config;
  int rc = kExitOk;
  if (!Load(where, &config, err, &rc)) return rc;
  Context* c = config.Find(args.name);
  const bool created = c == nullptr;
  if (created) {
    config.contexts.push_back(Context{args.name, "", "", "", "", ""});
    c = &config.contexts.back();
  }
  // Files as absolute paths: the context works from any directory.
  if (!args.controller.empty()) c->controller = args.controller;
  if (!args.ca.empty()) c->ca = Absolute(args.ca);
  if (!args.cert.empty()) c->cert = Absolute(args.cert);
  if (!args.key.empty()) c->key = Absolute(args.key);
  if (!args.token_file.empty()) c->token_file = Absolute(args.token_file);
  if (int s = Save(where, config, err); s != kExitOk) return s;
  out << "Context '" << args.name << "' " << (created ? "created" : "modified") << " in "
      << where.path << ".\n";
  if (config.current_context.empty()) {
    out << "Use it with: dcuctl config use-context " << args.name << "\n";
  }
  return kExitOk;
}

int RunDeleteContext(const ConfigLocation& where, const std::string& name, std::ostream& out,
                     std::ostream& err) {
  ClientConfig config;
  int rc = kExitOk;
  if (!Load(where, &config, err, &rc)) return rc;
  if (!config.Find(name)) return NoSuchContext(where, config, name, err);
  std::erase_if(config.contexts, [&](const Context& c) { return c.name == name; });
  const bool was_current = config.current_context == name;
  if (was_current) config.current_context.clear();
  if (int s = Save(where, config, err); s != kExitOk) return s;
  out << "Deleted context '" << name << "' from " << where.path << ".\n";
  if (was_current) out << "It was the current context; none is current now.\n";
  return kExitOk;
}

}  // namespace dcu::dcuctl
