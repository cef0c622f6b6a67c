#include "controller/core/scheduler.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/units.h"

namespace dcu::controller {
namespace {

using dcufleet::v1::Device;
using dcufleet::v1::NodeView;
using dcufleet::v1::Plan;

std::string NodeArch(const NodeView& n) {
  for (const Device& d : n.inventory().devices()) {
    if (!d.arch().empty()) return d.arch();
  }
  return "";
}

int64_t FreeOf(const Device& d) {
  if (d.schedulable_free().valid()) return d.schedulable_free().bytes();
  if (d.device_free().valid()) return d.device_free().bytes();
  if (d.host_free().valid()) return d.host_free().bytes();
  // Nothing measured: only the total is known; treat it as free but say so.
  return d.total().bytes();
}

int64_t TotalOf(const Device& d) {
  if (d.device_total().valid() && d.device_total().bytes() > 0) return d.device_total().bytes();
  return d.total().bytes();
}

bool HasEnvironment(const NodeView& n, const Plan& p) {
  if (p.runtime_location().empty()) return true;
  for (const auto& e : n.inventory().environments()) {
    if (e.kind() == p.runtime_kind() && e.location() == p.runtime_location()) return true;
  }
  return false;
}

// Describes why a device cannot be used, "" when it can.
std::string DeviceProblem(const Device& d, int64_t required_free, int64_t tolerance,
                          bool busy) {
  if (busy) return absl::StrCat("device ", d.index(), " runs another instance");
  std::string why;
  if (d.unreclaimed_bytes() > tolerance) {
    // The figures a person checks against the engine's own complaint
    // ("Free memory on device (4.8/63.98 GiB)").
    why = absl::StrCat("device ", d.index(), " holds ", common::HumanBytes(d.unreclaimed_bytes()),
                       " unreclaimed (", common::HumanBytes(FreeOf(d)), " of ",
                       common::HumanBytes(TotalOf(d)), " free)");
    std::vector<std::string> holders;
    for (const auto& h : d.holders()) {
      if (h.holder_class() == dcufleet::v1::HOLDER_MANAGED) continue;
      std::string cmd = h.cmdline().substr(0, 40);
      holders.push_back(absl::StrCat(
          "pid ", h.pid(),
          cmd.empty() ? " (no live process: KFD record only)"
                      : absl::StrCat(" `", cmd, h.cmdline().size() > 40 ? "…" : "", "`"),
          h.parent_alive() || cmd.empty() ? "" : ", exited parent"));
    }
    if (!holders.empty()) absl::StrAppend(&why, " (", absl::StrJoin(holders, "; "), ")");
    return why;
  }
  for (const auto& h : d.holders()) {
    if (h.holder_class() == dcufleet::v1::HOLDER_LEFTOVER ||
        h.holder_class() == dcufleet::v1::HOLDER_ZOMBIE) {
      return absl::StrCat("device ", d.index(), " is held by leftover pid ", h.pid());
    }
  }
  int64_t free = FreeOf(d);
  if (free < required_free) {
    return absl::StrCat("device ", d.index(), " has ", common::HumanBytes(free), " free (",
                        d.schedulable_free().valid() ? d.schedulable_free().source() : "total",
                        "), needs ", common::HumanBytes(required_free));
  }
  return "";
}

struct NodeCandidate {
  bool ok = false;
  std::string reason;
  Plan plan;
  int plan_index = 0;
  std::vector<int> devices;
  int tp = 0;
  int port = 0;
  std::string model_path;
  std::vector<std::string> explanation;
  std::vector<Plan> plans;
  std::vector<Plan> excluded;
};

NodeCandidate Evaluate(const ScheduleInput& in, const NodeView& node) {
  NodeCandidate c;
  const auto& spec = in.spec;
  if (node.state() != dcufleet::v1::NODE_READY) {
    c.reason = absl::StrCat("node is ", node.state() == dcufleet::v1::NODE_LOST ? "Lost" : "NotReady",
                            node.state_reason().empty() ? "" : absl::StrCat(" (", node.state_reason(), ")"));
    return c;
  }
  if (node.inventory().devices().empty()) {
    c.reason = "no accelerators reported";
    return c;
  }
  std::string arch = NodeArch(node);
  if (arch.empty()) {
    c.reason = "arch of its devices is unknown (see dcuctl describe node)";
    return c;
  }
  // Plans for this arch, filtered by what this deployment already learned
  // and what the node has installed.
  std::vector<Plan> plans, excluded;
  if (in.plans_for_arch) in.plans_for_arch(arch, &plans, &excluded);
  std::stable_sort(plans.begin(), plans.end(),
                   [](const Plan& a, const Plan& b) { return a.rank() < b.rank(); });
  std::vector<Plan> usable;
  std::vector<std::string> plan_problems;
  for (Plan p : plans) {
    if (!spec.stack_id().empty() && p.stack_id() != spec.stack_id()) continue;
    if (!spec.runtime().empty() && p.runtime_kind() != spec.runtime()) continue;
    if (in.excluded_stacks.count(p.stack_id())) {
      p.set_excluded_reason("failed deterministically in this deployment");
      excluded.push_back(p);
      continue;
    }
    if (in.runtime_on_node) {
      std::string where = in.runtime_on_node(p, node);
      if (where.empty()) {
        plan_problems.push_back(absl::StrCat(p.stack_id(), " not installed"));
        continue;
      }
      p.set_runtime_location(where);
    } else if (!HasEnvironment(node, p)) {
      plan_problems.push_back(absl::StrCat(p.stack_id(), " not installed"));
      continue;
    }
    usable.push_back(p);
  }
  c.plans = plans;
  c.excluded = excluded;
  if (usable.empty()) {
    if (plans.empty() && excluded.empty()) {
      c.reason = absl::StrCat("arch ", arch, " has no known stack for ", spec.model());
    } else if (plans.empty() || (usable.empty() && plan_problems.empty())) {
      std::vector<std::string> why;
      for (const auto& p : excluded) why.push_back(absl::StrCat(p.stack_id(), ": ", p.excluded_reason()));
      c.reason = absl::StrCat("arch ", arch, " has no working stack for ", spec.model(),
                              why.empty() ? "" : absl::StrCat(" (", absl::StrJoin(why, "; "), ")"));
      if (!spec.stack_id().empty() || !spec.runtime().empty()) {
        absl::StrAppend(&c.reason, " matching the requested",
                        spec.stack_id().empty() ? "" : absl::StrCat(" stack ", spec.stack_id()),
                        spec.runtime().empty() ? "" : absl::StrCat(" runtime ", spec.runtime()));
      }
    } else {
      c.reason = absl::StrCat("no usable stack installed (", absl::StrJoin(plan_problems, "; "), ")");
    }
    // Name every blocker at once: installing the stack alone would not do.
    if (in.model_path_on_node && in.model_path_on_node(node).empty()) {
      absl::StrAppend(&c.reason, "; model ", spec.model(), " not found under the node's model roots");
    }
    return c;
  }
  c.model_path = in.model_path_on_node ? in.model_path_on_node(node) : "";
  if (c.model_path.empty()) {
    c.reason = absl::StrCat("model ", spec.model(), " not found under the node's model roots");
    return c;
  }

  // Devices of this arch, in index order.
  std::vector<const Device*> devices;
  for (const Device& d : node.inventory().devices()) {
    if (d.arch() == arch) devices.push_back(&d);
  }
  const std::set<int> empty;
  auto busy_it = in.busy_devices.find(node.name());
  const std::set<int>& busy = busy_it == in.busy_devices.end() ? empty : busy_it->second;

  std::vector<int> tps;
  if (spec.tp() > 0) {
    tps.push_back(spec.tp());
  } else {
    tps = in.model.valid_tp;
    if (tps.empty()) tps = {1, 2, 4, 8};
  }
  std::string last_reason;
  for (int tp : tps) {
    if (tp > static_cast<int>(devices.size())) {
      last_reason = absl::StrCat("TP=", tp, " needs ", tp, " devices, node has ", devices.size());
      break;
    }
    if (!in.model.valid_tp.empty() &&
        std::find(in.model.valid_tp.begin(), in.model.valid_tp.end(), tp) == in.model.valid_tp.end()) {
      last_reason = absl::StrCat("TP=", tp, " does not divide the model's attention heads (",
                                 in.model.num_attention_heads, ")");
      continue;
    }
    int64_t total = TotalOf(*devices.front());
    MemoryCheck m = in.memory ? in.memory(tp, total) : MemoryCheck{true, 0, {}, ""};
    if (!m.fits) {
      last_reason = absl::StrCat("TP=", tp, ": ", m.reason);
      continue;
    }
    std::vector<int> good;
    std::vector<std::string> problems;
    for (const Device* d : devices) {
      std::string p = DeviceProblem(*d, m.required_free_bytes, in.unreclaimed_tolerance_bytes,
                                    busy.count(d->index()) > 0);
      if (p.empty()) {
        good.push_back(d->index());
      } else {
        problems.push_back(p);
      }
    }
    if (static_cast<int>(good.size()) >= tp) {
      c.ok = true;
      c.tp = tp;
      c.devices.assign(good.begin(), good.begin() + tp);
      c.plan = usable.front();
      c.explanation = m.explanation;
      int64_t min_free = INT64_MAX;
      for (int idx : c.devices) {
        for (const Device* d : devices) {
          if (d->index() == idx) min_free = std::min(min_free, FreeOf(*d));
        }
      }
      c.explanation.push_back(absl::StrCat(
          "start-up rule on devices [", absl::StrJoin(c.devices, ","), "]: device-view free ≥ ",
          common::HumanBytes(m.required_free_bytes), " (smallest: ", common::HumanBytes(min_free),
          "): ok"));
      if (!problems.empty()) {
        c.explanation.push_back(absl::StrCat("avoided: ", absl::StrJoin(problems, "; ")));
      }
      break;
    }
    last_reason = absl::StrCat(good.size(), " of ", devices.size(), " devices have ≥ ",
                               common::HumanBytes(m.required_free_bytes),
                               " free (device view) for TP=", tp,
                               problems.empty() ? "" : absl::StrCat("; ", absl::StrJoin(problems, "; ")));
  }
  if (!c.ok) {
    c.reason = last_reason.empty() ? "no TP fits" : last_reason;
    return c;
  }
  // The first port from the base not used by our instances on the node.
  auto ports_it = in.busy_ports.find(node.name());
  int port = in.port_base;
  if (ports_it != in.busy_ports.end()) {
    while (ports_it->second.count(port)) ++port;
  }
  c.port = port;
  return c;
}

}  // namespace

ScheduleResult Schedule(const ScheduleInput& in) {
  ScheduleResult out;
  std::vector<const NodeView*> nodes;
  for (const auto& n : in.nodes) {
    if (!in.spec.node().empty() && n.name() != in.spec.node()) continue;
    nodes.push_back(&n);
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeView* a, const NodeView* b) { return a->name() < b->name(); });
  if (nodes.empty()) {
    out.rejections.push_back(dcufleet::v1::NodeRejection());
    out.rejections.back().set_node(in.spec.node().empty() ? "(fleet)" : in.spec.node());
    out.rejections.back().set_reason(in.spec.node().empty() ? "no nodes registered"
                                                            : "no such node");
    return out;
  }
  const NodeView* best = nullptr;
  NodeCandidate best_c;
  std::vector<std::pair<const NodeView*, NodeCandidate>> all;
  for (const NodeView* n : nodes) {
    NodeCandidate c = Evaluate(in, *n);
    all.emplace_back(n, c);
    if (!c.ok) continue;
    // Better plan (verified before untested, bare before container) first,
    // then fewer devices used, then the node name for determinism.
    auto rank = [](const NodeCandidate& x) { return std::make_tuple(x.plan.rank(), x.tp); };
    if (!best || rank(c) < rank(best_c)) {
      best = n;
      best_c = c;
    }
  }
  for (auto& [n, c] : all) {
    if (n == best) continue;
    dcufleet::v1::NodeRejection r;
    r.set_node(n->name());
    r.set_reason(c.ok ? absl::StrCat("fits, but node '", best->name(), "' ranks higher") : c.reason);
    out.rejections.push_back(r);
    if (!best && out.plans.empty() && !c.plans.empty()) {
      out.plans = c.plans;
      out.excluded_plans = c.excluded;
    }
  }
  if (!best) return out;
  out.placed = true;
  out.plan = best_c.plan;
  out.plans = best_c.plans;
  out.excluded_plans = best_c.excluded;
  out.model_path = best_c.model_path;
  auto* p = &out.placement;
  p->set_node(best->name());
  p->set_arch(best_c.plan.arch().empty() ? NodeArch(*best) : best_c.plan.arch());
  for (int d : best_c.devices) p->add_device_indices(d);
  p->set_tp(best_c.tp);
  p->set_port(best_c.port);
  for (const auto& line : best_c.explanation) p->add_memory_explanation(line);
  return out;
}

}  // namespace dcu::controller
