#include "dcuctl/edit_commands.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
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

int RunEdit(Client& client, const std::string& name, std::ostream& out, std::ostream& err) {
  int rc = kExitOk;
  auto resp = FetchDeployment(client, name, absl::StrCat("reading deployment '", name, "' to edit"), err, &rc);
  if (!resp) return rc;
  // YAML, as kubectl edits; `-o json` edits JSON.
  const bool json = client.options().output == "json";
  const nlohmann::json doc = ProtoToJson(resp->deployment());
  const std::string before = json ? doc.dump(2) + "\n" : ToYaml(doc);

  const char* tmp = getenv("TMPDIR");
  std::string path = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/dcuctl-edit-XXXXXX", json ? ".json" : ".yaml");
  int fd = mkstemps(path.data(), 5);
  if (fd < 0) {
    err << "error: cannot create a file to edit in " << (tmp && *tmp ? tmp : "/tmp") << ": "
        << strerror(errno) << " (set $TMPDIR)\n";
    return kExitFailed;
  }
  const bool written = write(fd, before.data(), before.size()) == static_cast<ssize_t>(before.size());
  close(fd);
  if (!written) {
    err << "error: cannot write " << path << "\n";
    unlink(path.c_str());
    return kExitFailed;
  }
  const char* editor = getenv("DCUCTL_EDITOR");
  if (!editor || !*editor) editor = getenv("EDITOR");
  if (absl::Status e = RunInteractive(EditorArgv(editor ? editor : "", path)); !e.ok()) {
    err << "error: " << e.message() << "; nothing applied\n";
    unlink(path.c_str());
    return kExitFailed;
  }
  const std::string after = ReadFile(path);
  if (after == before) {
    out << "Edit cancelled, no changes made.\n";
    unlink(path.c_str());
    return kExitOk;
  }
  auto specs = SpecsFromText(after, path);
  absl::Status refused = specs.status();
  if (specs.ok() && (specs->size() != 1 || (*specs)[0].name() != name)) {
    // A rename would create a second deployment and leave this one: not
    // an edit of it.
    refused = absl::InvalidArgumentError(absl::StrCat(
        path, ": an edit of deployment '", name, "' must keep its spec.name (",
        specs->size() == 1 ? absl::StrCat("'", (*specs)[0].name(), "' given") : "a list given",
        "); to create another, apply -f a file of its own"));
  }
  if (!refused.ok()) {
    err << "error: " << refused.message() << "\n"
        << "your edit is kept in " << path << ": fix it and run dcuctl apply -f " << path << "\n";
    return kExitUsage;
  }
  DeployArgs deploy;
  deploy.spec = (*specs)[0];
  rc = RunDeploy(client, deploy, out, err);
  if (rc == kExitOk) {
    unlink(path.c_str());
  } else {
    err << "your edit is kept in " << path << "\n";
  }
  return rc;
}

}  // namespace dcu::dcuctl
