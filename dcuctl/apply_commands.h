#pragma once

// dcuctl apply -f FILE: deployments declared in a file, as `kubectl apply -f`.
// The file (YAML or JSON) is what `dcuctl get deployment NAME -o yaml|json` prints (a deployment;
// only its spec is read, status is the controller's), a list of them (`get
// deployments -o json`), or a bare DeploymentSpec. Each is deployed as
// `dcuctl deploy` would: created, configured (a rollout or a scale) or
// unchanged.

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcuctl/client.h"
#include "dcufleet/v1/fleet.pb.h"

namespace dcu::dcuctl {

struct ApplyArgs {
  // A path, or "-" for standard input.
  std::string file;
  bool dry_run = false;
  bool wait = false;
  bool watch = false;
  double wait_timeout_s = 3600;
};

// The largest file read (a list of thousands of specs fits many times).
inline constexpr size_t kMaxApplyFileBytes = 8u << 20;

// The specs `text` declares, in file order: JSON when it starts with '{' or
// '[', YAML otherwise (several documents separated by "---"). Each document
// is a deployment (its spec), a list, or a bare spec. INVALID_ARGUMENT
// naming `where` (the file) and the place in it for a syntax error (JSON's
// byte, YAML's line and column), a field a spec does not have, or a spec
// without a model; nothing is deployed then.
absl::StatusOr<std::vector<dcufleet::v1::DeploymentSpec>> SpecsFromText(const std::string& text,
                                                                        const std::string& where);

// Exit codes as deploy's for each spec, the first non-zero one kept; 2 for a
// file that cannot be read or parsed (nothing is deployed then).
int RunApply(Client& client, const ApplyArgs& args, std::istream& in, std::ostream& out,
             std::ostream& err);

}  // namespace dcu::dcuctl
