#include "dcuctl/contexts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dcu::dcuctl {
namespace {

absl::Status LineError(const std::string& path, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", what));
}

// A value as written: bare (trimmed), or "quoted".
absl::StatusOr<std::string> Unquote(absl::string_view v, const std::string& path, int line) {
  if (v.empty() || v.front() != '"') return std::string(v);
  std::string out;
  size_t i = 1;
  for (; i < v.size() && v[i] != '"'; ++i) {
    if (v[i] == '\\' && i + 1 < v.size() && (v[i + 1] == '"' || v[i + 1] == '\\')) ++i;
    out += v[i];
  }
  if (i >= v.size()) return LineError(path, line, "a quoted value is not closed");
  if (i + 1 != v.size()) return LineError(path, line, "text after a quoted value");
  return out;
}

std::string Quote(const std::string& v) {
  const bool plain = !v.empty() && v.front() != ' ' && v.back() != ' ' && v.front() != '"' &&
                     v.find_first_of("\t") == std::string::npos;
  if (plain) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}


}  // namespace

const Context* ClientConfig::Find(absl::string_view name) const {
  for (const auto& c : contexts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

Context* ClientConfig::Find(absl::string_view name) {
  for (auto& c : contexts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

absl::Status CheckContextName(absl::string_view name) {
  auto ok = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '@' ||
           c == ':' || c == '-';
  };
  bool good = !name.empty() && name.size() <= 128 &&
              absl::ascii_isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) good = good && ok(c);
  if (good) return absl::OkStatus();
  std::string shown(name.substr(0, 40));
  for (char& c : shown) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "context name '", shown, "' is not 1-128 of letters, digits and . _ @ : - (starting with a "
      "letter or digit)"));
}

absl::StatusOr<ConfigLocation> LocateConfig(const std::string& flag, const EnvLookup& env) {
  if (!flag.empty()) return ConfigLocation{flag, "--dcuconfig"};
  if (const char* v = env("DCUCONFIG")) {
    if (*v == '\0') {
      return absl::InvalidArgumentError(
          "$DCUCONFIG is set but empty: unset it (for ~/.config/dcufleet/config) or name a file");
    }
    return ConfigLocation{v, "$DCUCONFIG"};
  }
  if (const char* x = env("XDG_CONFIG_HOME"); x && *x == '/') {
    return ConfigLocation{absl::StrCat(x, "/dcufleet/config"), "$XDG_CONFIG_HOME"};
  }
  if (const char* home = env("HOME"); home && *home) {
    return ConfigLocation{absl::StrCat(home, "/.config/dcufleet/config"), "~/.config"};
  }
  return absl::InvalidArgumentError(
      "no place for dcuctl's config: $HOME is not set (pass --dcuconfig FILE or set $DCUCONFIG)");
}

absl::StatusOr<ClientConfig> ParseConfig(absl::string_view text, const std::string& path) {
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", text.size(), " bytes; a dcuctl config is at most ", kMaxConfigBytes));
  }
  ClientConfig config;
  Context* ctx = nullptr;
  std::vector<std::string> keys_seen;
  bool current_seen = false;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    for (char c : raw) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return LineError(path, line_no, "a control character (is this a text file?)");
      }
    }
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') return LineError(path, line_no, "a section header must end with ']'");
      absl::string_view inner = absl::StripAsciiWhitespace(line.substr(1, line.size() - 2));
      if (!absl::ConsumePrefix(&inner, "context") || (!inner.empty() && inner[0] != ' ')) {
        return LineError(path, line_no, "the only section is [context NAME]");
      }
      inner = absl::StripAsciiWhitespace(inner);
      if (inner.size() >= 2 && inner.front() == '"' && inner.back() == '"') {
        inner = inner.substr(1, inner.size() - 2);
      }
      if (absl::Status s = CheckContextName(inner); !s.ok()) return LineError(path, line_no, s.message());
      if (config.Find(inner)) {
        return LineError(path, line_no, absl::StrCat("context '", inner, "' is defined twice"));
      }
      config.contexts.push_back(Context{std::string(inner), "", "", "", "", ""});
      ctx = &config.contexts.back();
      keys_seen.clear();
      continue;
    }
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return LineError(path, line_no, "expected 'key = value' or '[context NAME]'");
    }
    std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    auto value = Unquote(absl::StripAsciiWhitespace(line.substr(eq + 1)), path, line_no);
    if (!value.ok()) return value.status();
    if (ctx == nullptr) {
      if (key != "current-context") {
        return LineError(path, line_no,
                         absl::StrCat("unknown key '", key,
                                      "' before any [context NAME] (only current-context goes there)"));
      }
      if (current_seen) return LineError(path, line_no, "current-context is set twice");
      current_seen = true;
      config.current_context = *value;
      continue;
    }
    std::string* field = key == "controller" ? &ctx->controller
                         : key == "ca"       ? &ctx->ca
                         : key == "cert"     ? &ctx->cert
                         : key == "key"      ? &ctx->key
                         : key == "token-file" ? &ctx->token_file
                                               : nullptr;
    if (field == nullptr) {
      return LineError(path, line_no,
                       absl::StrCat("unknown key '", key, "' in context '", ctx->name,
                                    "' (keys: controller, ca, cert, key, token-file)"));
    }
    for (const auto& k : keys_seen) {
      if (k == key) {
        return LineError(path, line_no, absl::StrCat("'", key, "' is set twice in context '", ctx->name, "'"));
      }
    }
    keys_seen.push_back(key);
    *field = *value;
  }
  return config;
}

absl::StatusOr<ClientConfig> LoadConfig(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return ClientConfig{};
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", size, " bytes; a dcuctl config is at most ", kMaxConfigBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot be read"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

std::string SerializeConfig(const ClientConfig& config) {
  std::string out =
      "# dcuctl contexts, written by `dcuctl config` (format: dcuctl config --help,\n"
      "# docs/dcuctl.md).\n";
  if (!config.current_context.empty()) {
    absl::StrAppend(&out, "current-context = ", Quote(config.current_context), "\n");
  }
  for (const auto& c : config.contexts) {
    absl::StrAppend(&out, "\n[context ", c.name, "]\n");
    auto put = [&](const char* key, const std::string& v) {
      if (!v.empty()) absl::StrAppend(&out, key, " = ", Quote(v), "\n");
    };
    put("controller", c.controller);
    put("ca", c.ca);
    put("cert", c.cert);
    put("key", c.key);
    put("token-file", c.token_file);
  }
  return out;
}

absl::Status SaveConfig(const std::string& path, const ClientConfig& config) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path() && !std::filesystem::exists(p.parent_path(), ec)) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot create the directory '", p.parent_path().string(), "' of ", path, ": ", ec.message()));
    }
    (void)::chmod(p.parent_path().c_str(), 0700);
  }
  std::string tmpl = absl::StrCat(path, ".tmp.XXXXXX");
  int fd = ::mkstemp(tmpl.data());  // mode 0600
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write next to ", path, ": ", std::strerror(errno)));
  }
  const std::string text = SerializeConfig(config);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      return absl::InternalError(absl::StrCat("writing ", tmpl, ": ", std::strerror(e)));
    }
    done += static_cast<size_t>(n);
  }
  (void)::fchmod(fd, 0600);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return absl::InternalError(absl::StrCat("writing ", tmpl, ": ", std::strerror(errno)));
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmpl.c_str());
    return absl::InternalError(absl::StrCat("replacing ", path, ": ", std::strerror(e)));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResolvedConnection> ResolveConnection(const ConnectionFlags& flags,
                                                     const EnvLookup& env,
                                                     const ClientConfig* config,
                                                     const std::string& config_path) {
  ResolvedConnection r;
  // Which context, if any.
  const Context* ctx = nullptr;
  std::string wanted, why;
  if (!flags.context.empty()) {
    wanted = flags.context;
    why = "--context";
  } else if (const char* v = env("DCUFLEET_CONTEXT"); v && *v) {
    wanted = v;
    why = "$DCUFLEET_CONTEXT";
  } else if (config && !config->current_context.empty()) {
    wanted = config->current_context;
    why = absl::StrCat("current-context in ", config_path);
  }
  if (!wanted.empty()) {
    ctx = config ? config->Find(wanted) : nullptr;
    if (!ctx) {
      return absl::InvalidArgumentError(absl::StrCat(
          "context '", wanted, "' (from ", why, ") is not in ", config_path,
          "; see dcuctl config get-contexts, or add it with dcuctl config set-context ", wanted,
          " --controller HOST:PORT"));
    }
    r.context = ctx->name;
    r.context_source = why;
  }
  const std::string from_ctx = ctx ? absl::StrCat("context '", ctx->name, "'") : "";

  if (!flags.controller.empty()) {
    r.controller = flags.controller;
    r.controller_source = "--controller";
  } else if (const char* v = env("DCUFLEET_CONTROLLER")) {
    if (*v == '\0') {
      return absl::InvalidArgumentError(
          "$DCUFLEET_CONTROLLER is set but empty; unset it (to use the current context or "
          "127.0.0.1:7070) or set it to HOST:PORT");
    }
    r.controller = v;
    r.controller_source = "$DCUFLEET_CONTROLLER";
  } else if (ctx && !ctx->controller.empty()) {
    r.controller = ctx->controller;
    r.controller_source = from_ctx;
  } else {
    r.controller = "127.0.0.1:7070";
    r.controller_source = "the default";
  }
  // The credentials: each from its flag, else its variable, else the context.
  struct Field {
    const std::string& flag;
    const char* env;
    std::string Context::*member;
    std::string* out;
  } fields[] = {
      {flags.tls_ca, "DCUFLEET_TLS_CA", &Context::ca, &r.tls_ca},
      {flags.tls_cert, "DCUFLEET_TLS_CERT", &Context::cert, &r.tls_cert},
      {flags.tls_key, "DCUFLEET_TLS_KEY", &Context::key, &r.tls_key},
      {flags.token_file, "DCUFLEET_TOKEN_FILE", &Context::token_file, &r.token_file},
  };
  for (const Field& f : fields) {
    if (!f.flag.empty()) {
      *f.out = f.flag;
    } else if (const char* v = env(f.env); v && *v) {
      *f.out = v;
    } else if (ctx) {
      *f.out = ctx->*f.member;
    }
  }
  return r;
}

}  // namespace dcu::dcuctl
