#include "dcuctl/edit_commands.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "dcuctl/apply_commands.h"
#include "dcuctl/deploy_commands.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/output.h"
#include "dcuctl/query.h"

namespace dcu::dcuctl {

namespace {

// Runs the editor in the foreground with this process's terminal (it is
// interactive: no captured output, no process group of its own) and waits.
absl::Status RunInteractive(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: ", strerror(errno)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return absl::NotFoundError(absl::StrCat("the editor '", argv[0],
                                            "' could not be run (set $EDITOR or $DCUCTL_EDITOR)"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::AbortedError(absl::StrCat(
        "the editor '", argv[0], "' ",
        WIFEXITED(status) ? absl::StrCat("exited ", WEXITSTATUS(status))
                          : absl::StrCat("was killed by signal ", WTERMSIG(status))));
  }
  return absl::OkStatus();
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::vector<std::string> EditorArgv(const std::string& editor_variable, const std::string& path) {
  std::vector<std::string> argv = absl::StrSplit(editor_variable, ' ', absl::SkipWhitespace());
  if (argv.empty()) argv.push_back("vi");
  argv.push_back(path);
  return argv;
}

std::string BlankCommentLines(const std::string& text) {
  std::string out = text;
  bool line_start = true;
  bool in_comment = false;
  for (char& c : out) {
    if (c == '\n') {
      line_start = true;
      in_comment = false;
      continue;
    }
    if (line_start && c == '#') in_comment = true;
    line_start = false;
    if (in_comment) c = ' ';
  }
  return out;
}

std::string EditHeader(const std::string& problem) {
  std::string h =
      "# Edit the deployment below and save it to apply the change. Lines that begin\n"
      "# with '#' are ignored, and an empty file cancels the edit. If the change\n"
      "# cannot be read, this file opens again with the reason.\n"
      "#\n";
  if (!problem.empty()) {
    absl::StrAppend(&h, "# It was not applied:\n");
    for (absl::string_view line : absl::StrSplit(problem, '\n', absl::SkipEmpty())) {
      absl::StrAppend(&h, "# * ", line, "\n");
    }
    absl::StrAppend(&h, "#\n");
  }
  return h;
}

namespace {

bool WriteWhole(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  return static_cast<bool>(f);
}

// What an edit saved, as one deployment spec of `name`, or why not.
absl::StatusOr<dcufleet::v1::DeploymentSpec> EditedSpec(const std::string& text, const std::string& path,
                                                        const std::string& name) {
  auto specs = SpecsFromText(text, path);
  if (!specs.ok()) return specs.status();
  if (specs->size() != 1 || (*specs)[0].name() != name) {
    // A rename would create a second deployment and leave this one: not
    // an edit of it.
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": an edit of deployment '", name, "' must keep its spec.name (",
        specs->size() == 1 ? absl::StrCat("'", (*specs)[0].name(), "' given") : "a list given",
        "); to create another, apply -f a file of its own"));
  }
  return (*specs)[0];
}

// Without the comment lines, for `apply -f` (JSON has no comments).
std::string WithoutCommentLines(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "#")) continue;
    absl::StrAppend(&out, line, "\n");
  }
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

}  // namespace

int RunEdit(Client& client, const std::string& name, std::ostream& out, std::ostream& err) {
  int rc = kExitOk;
  auto resp = FetchDeployment(client, name, absl::StrCat("reading deployment '", name, "' to edit"), err, &rc);
  if (!resp) return rc;
  // YAML, as kubectl edits; `-o json` edits JSON.
  const bool json = client.options().output == "json";
  const nlohmann::json doc = ProtoToJson(resp->deployment());
  const std::string original = json ? doc.dump(2) + "\n" : ToYaml(doc);

  const char* tmp = getenv("TMPDIR");
  std::string path = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/dcuctl-edit-XXXXXX", json ? ".json" : ".yaml");
  int fd = mkstemps(path.data(), 5);
  if (fd < 0) {
    err << "error: cannot create a file to edit in " << (tmp && *tmp ? tmp : "/tmp") << ": "
        << strerror(errno) << " (set $TMPDIR)\n";
    return kExitFailed;
  }
  close(fd);
  const char* editor = getenv("DCUCTL_EDITOR");
  if (!editor || !*editor) editor = getenv("EDITOR");
  const std::vector<std::string> argv = EditorArgv(editor ? editor : "", path);

  // The body the editor was last given (without its header), and why the
  // save before it was refused ("" on the first opening).
  std::string body = original;
  std::string problem;
  dcufleet::v1::DeploymentSpec spec;
  // A person fixes a refused save in a few openings; an editor that is not
  // one (a script, an $EDITOR that rewrites the file each time) would be
  // opened for ever, each save refused for another reason.
  constexpr int kMaxRefusedSaves = 10;
  int refused = 0;
  for (;;) {
    if (!WriteWhole(path, EditHeader(problem) + body)) {
      err << "error: cannot write " << path << "\n";
      unlink(path.c_str());
      return kExitFailed;
    }
    if (absl::Status e = RunInteractive(argv); !e.ok()) {
      err << "error: " << e.message() << "; nothing applied\n";
      unlink(path.c_str());
      return kExitFailed;
    }
    const std::string saved = ReadFile(path);
    const std::string read = BlankCommentLines(saved);
    if (read.find_first_not_of(" \t\r\n") == std::string::npos) {
      out << "Edit cancelled, the file was emptied; no changes made.\n";
      unlink(path.c_str());
      return kExitOk;
    }
    // Compared without the comments: an editor (or a script) that writes
    // the same body back without the header changed nothing either.
    const std::string kept = WithoutCommentLines(saved);
    if (kept == body) {
      if (problem.empty()) {
        out << "Edit cancelled, no changes made.\n";
        unlink(path.c_str());
        return kExitOk;
      }
      // Refused, and saved again without a further change: the user gave
      // up on it here. Kept for apply -f, without the comments.
      WriteWhole(path, kept);
      // Read again as kept, so that a line or byte it names is the file's.
      absl::Status why = EditedSpec(kept, path, name).status();
      err << "error: " << (why.ok() ? problem : std::string(why.message())) << "\n"
          << "Edit cancelled, no valid changes were saved. Your edit is kept in " << path
          << ": fix it and run dcuctl apply -f " << path << "\n";
      return kExitUsage;
    }
    absl::StatusOr<dcufleet::v1::DeploymentSpec> edited = EditedSpec(read, path, name);
    if (edited.ok()) {
      spec = *std::move(edited);
      body = kept;
      break;
    }
    problem = std::string(edited.status().message());
    body = kept;
    if (++refused == kMaxRefusedSaves) {
      WriteWhole(path, kept);
      err << "error: " << problem << "\n"
          << "Edit cancelled: " << kMaxRefusedSaves << " saves in a row were refused (is $EDITOR an "
          << "interactive editor?). Your last edit is kept in " << path
          << ": fix it and run dcuctl apply -f " << path << "\n";
      return kExitUsage;
    }
    // Said here too: an editor that does not show the file's top (or a
    // script) still tells the user why it opened again.
    err << "error: " << problem << "\n(opening the editor again)\n";
  }
  DeployArgs deploy;
  deploy.spec = std::move(spec);
  rc = RunDeploy(client, deploy, out, err);
  if (rc == kExitOk) {
    unlink(path.c_str());
  } else {
    WriteWhole(path, body);
    err << "your edit is kept in " << path << "\n";
  }
  return rc;
}

}  // namespace dcu::dcuctl
