#include "controller/core/model_sources.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/net.h"

namespace dcu::controller {
namespace {

std::string Basename(const std::string& path) {
  size_t end = path.find_last_not_of('/');
  if (end == std::string::npos) return "";
  size_t slash = path.rfind('/', end);
  return path.substr(slash == std::string::npos ? 0 : slash + 1, end - (slash == std::string::npos ? 0 : slash + 1) + 1);
}

size_t CommonPrefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// The directories of `view` that hold `model`: matched by the catalog to
// that name, or named so.
std::vector<const dcufleet::v1::ModelDirectory*> CopiesOn(
    const dcufleet::v1::NodeView& view, const std::string& model,
    const std::vector<dcufleet::v1::NodeModelDirectory>& dirs) {
  std::vector<const dcufleet::v1::ModelDirectory*> out;
  for (const auto& d : view.inventory().models()) {
    bool match = Basename(d.path()) == model;
    for (const auto& nd : dirs) {
      if (nd.node() == view.name() && nd.directory().path() == d.path() && nd.model() == model) match = true;
    }
    if (match) out.push_back(&d);
  }
  return out;
}

}  // namespace

absl::StatusOr<ModelCopyPlan> PickModelSource(const std::string& model, const std::string& target,
                                              const std::string& from,
                                              const std::vector<dcufleet::v1::NodeView>& nodes,
                                              const std::vector<dcufleet::v1::NodeModelDirectory>& dirs) {
  const dcufleet::v1::NodeView* to = nullptr;
  for (const auto& n : nodes) {
    if (n.name() == target) to = &n;
  }
  if (!to) return absl::NotFoundError(absl::StrCat("node '", target, "' is not registered"));
  if (to->state() != dcufleet::v1::NODE_READY) {
    return absl::FailedPreconditionError(absl::StrCat("node '", target, "' is not Ready"));
  }
  for (const auto* d : CopiesOn(*to, model, dirs)) {
    if (d->weights().verdict() != dcufleet::v1::WEIGHTS_DAMAGED) {
      return absl::AlreadyExistsError(absl::StrCat("node '", target, "' already has ", model, " at ", d->path()));
    }
    // The agent never writes over a directory: the operator moves it away.
    return absl::FailedPreconditionError(absl::StrCat("node '", target, "' has a damaged copy of ", model, " at ",
                                                      d->path(), "; move it out of the model root first"));
  }
  struct Candidate {
    int rank;  // 0 clean, 1 not verified
    size_t near;
    const dcufleet::v1::NodeView* node;
    const dcufleet::v1::ModelDirectory* dir;
  };
  std::vector<Candidate> ok;
  std::vector<std::string> passed;
  for (const auto& n : nodes) {
    if (n.name() == target || (!from.empty() && n.name() != from)) continue;
    auto copies = CopiesOn(n, model, dirs);
    if (copies.empty()) continue;
    if (n.state() != dcufleet::v1::NODE_READY) {
      passed.push_back(absl::StrCat(n.name(), ": not Ready"));
      continue;
    }
    if (n.inventory().transfer_port() <= 0) {
      passed.push_back(absl::StrCat(n.name(), ": serves no peers (dcu-agent --transfer-listen)"));
      continue;
    }
    for (const auto* d : copies) {
      if (d->weights().verdict() == dcufleet::v1::WEIGHTS_DAMAGED) {
        std::string why = d->weights().problems().empty() ? "fails verification" : d->weights().problems(0).message();
        passed.push_back(absl::StrCat(n.name(), ": ", d->path(), " is damaged (", why, ")"));
        continue;
      }
      ok.push_back({d->weights().verdict() == dcufleet::v1::WEIGHTS_CLEAN ? 0 : 1,
                    CommonPrefix(n.address(), to->address()), &n, d});
    }
  }
  if (ok.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no node has a usable copy of ", model, " to copy to '", target, "'",
        from.empty() ? "" : absl::StrCat(" from '", from, "'"),
        passed.empty() ? "" : absl::StrCat(" (", absl::StrJoin(passed, "; "), ")")));
  }
  std::sort(ok.begin(), ok.end(), [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(a.rank, -static_cast<long>(a.near), a.node->name()) <
           std::make_tuple(b.rank, -static_cast<long>(b.near), b.node->name());
  });
  const Candidate& c = ok.front();
  ModelCopyPlan plan;
  plan.model_dir = Basename(c.dir->path());
  plan.source_node = c.node->name();
  plan.source_path = c.dir->path();
  const std::string host = c.node->address().empty() ? c.node->name() : c.node->address();
  plan.source_address = common::JoinHostPort(host, c.node->inventory().transfer_port());
  return plan;
}

const dcufleet::v1::ModelTransfer* FindTransfer(const dcufleet::v1::NodeView& node, const std::string& model_dir) {
  for (const auto& t : node.inventory().transfers()) {
    if (t.model_dir() == model_dir) return &t;
  }
  return nullptr;
}

absl::StatusOr<ModelCopyPlan> PlanCopyBeforeLaunch(
    const std::string& model, const dcufleet::v1::NodeView& target,
    const std::vector<const dcufleet::v1::NodeView*>& views,
    const std::function<std::string(const dcufleet::v1::NodeView&)>& path_on_node, const ModelOrigins& origins) {
  std::vector<dcufleet::v1::NodeView> nodes = {target};
  std::vector<dcufleet::v1::NodeModelDirectory> dirs;
  for (const auto* v : views) {
    if (v->name() == target.name()) continue;
    std::string path = path_on_node(*v);
    if (path.empty()) continue;
    nodes.push_back(*v);
    dcufleet::v1::NodeModelDirectory nd;
    nd.set_node(v->name());
    nd.mutable_directory()->set_path(path);
    nd.set_model(model);
    dirs.push_back(std::move(nd));
  }
  auto plan = PickModelSource(model, target.name(), "", nodes, dirs);
  // Origins pass over what already failed themselves.
  if (absl::IsNotFound(plan.status())) return PlanOriginCopy(model, origins, target, plan.status());
  if (!plan.ok()) return plan.status();
  const dcufleet::v1::ModelTransfer* t = FindTransfer(target, plan->model_dir);
  if (t && t->state() == dcufleet::v1::MODEL_TRANSFER_FAILED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the copy of ", plan->model_dir, " from ",
        t->source_node().empty() ? t->source_address() : absl::StrCat("node '", t->source_node(), "'"),
        " failed: ", t->message(), " (dcuctl model copy ", model, " --to ", target.name(), " retries)"));
  }
  return plan;
}

std::string ModelCopyPlan::From() const {
  if (!shared_dir.empty()) return absl::StrCat("shared directory ", shared_dir, "/", model_dir);
  if (!mirror_url.empty()) return absl::StrCat("mirror ", mirror_url, "/", repo);
  return absl::StrCat("node '", source_node, "' (", source_path, ")");
}

std::string ModelCopyPlan::SourceAddress() const {
  if (!shared_dir.empty()) return shared_dir;
  if (!mirror_url.empty()) return absl::StrCat(mirror_url, "/", repo);
  return source_address;
}

dcufleet::v1::FetchModelCommand ModelCopyPlan::ToCommand() const {
  dcufleet::v1::FetchModelCommand c;
  c.set_model_dir(model_dir);
  c.set_source_node(source_node);
  c.set_source_address(source_address);
  c.set_source_url(mirror_url);
  c.set_source_repo(repo);
  c.set_source_dir(shared_dir);
  return c;
}

absl::StatusOr<ModelCopyPlan> PlanSharedDirCopy(const std::string& model, const std::string& repo,
                                                const std::string& dir) {
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root[0] != '/' || root.size() > 4096 || root.find('\0') != std::string::npos ||
      absl::StrContains(absl::StrCat(root, "/"), "/../")) {
    return absl::InvalidArgumentError(absl::StrCat("shared directory '", dir,
                                                   "' must be an absolute path without '..'"));
  }
  ModelCopyPlan plan;
  plan.model_dir = repo.empty() ? model : Basename(repo);
  if (plan.model_dir.empty() || plan.model_dir[0] == '.') {
    return absl::InvalidArgumentError(absl::StrCat("'", model, "' names no directory"));
  }
  plan.shared_dir = root;
  plan.source_path = absl::StrCat(root, "/", plan.model_dir);
  return plan;
}

absl::StatusOr<ModelCopyPlan> PlanOriginCopy(const std::string& model, const ModelOrigins& origins,
                                             const dcufleet::v1::NodeView& target, const absl::Status& why_no_node,
                                             bool person_retries) {
  std::vector<ModelCopyPlan> candidates;
  std::vector<std::string> why;
  if (!origins.shared_dir.empty()) {
    auto p = PlanSharedDirCopy(model, origins.repo, origins.shared_dir);
    if (p.ok()) {
      candidates.push_back(*std::move(p));
    } else {
      why.push_back(std::string(p.status().message()));
    }
  }
  if (!origins.url.empty() && !origins.repo.empty()) {
    ModelCopyPlan plan;
    plan.model_dir = Basename(origins.repo);
    plan.mirror_url = origins.url;
    plan.repo = origins.repo;
    plan.source_path = absl::StrCat(origins.url, "/", origins.repo);
    if (plan.model_dir.empty() || plan.model_dir[0] == '.') {
      why.push_back(absl::StrCat("repository '", origins.repo, "' of ", model, " names no directory"));
    } else {
      candidates.push_back(std::move(plan));
    }
  }
  if (candidates.empty()) {
    std::string none;
    if (origins.shared_dir.empty() && origins.url.empty()) {
      none = "; no shared directory or mirror is configured (dcu-controller --model-shared-dir, --model-mirror)";
    } else if (!origins.url.empty() && origins.repo.empty()) {
      none = absl::StrCat("; the catalog names no hf_repo for ", model);
    }
    for (const auto& w : why) absl::StrAppend(&none, "; ", w);
    return absl::NotFoundError(absl::StrCat(why_no_node.message(), none));
  }
  // The agent keeps the last transfer per directory. Origins are tried in
  // order, so a failure reported from origin i means those before it were
  // tried (or passed over) already: the next one is i + 1. After the last
  // one failed, none is asked again until a person retries (a source that
  // lacks the model is not asked every pass).
  size_t next = 0;
  std::string failed;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const dcufleet::v1::ModelTransfer* t = FindTransfer(target, candidates[i].model_dir);
    if (t && t->state() == dcufleet::v1::MODEL_TRANSFER_FAILED &&
        t->source_address() == candidates[i].SourceAddress()) {
      next = i + 1;
      failed = absl::StrCat("the copy from ", candidates[i].From(), " failed: ", t->message());
    }
  }
  if (next < candidates.size()) return std::move(candidates[next]);
  if (person_retries) return std::move(candidates.front());
  return absl::FailedPreconditionError(
      absl::StrCat(failed, " (dcuctl model copy ", model, " --to ", target.name(), " retries)"));
}

}  // namespace dcu::controller
