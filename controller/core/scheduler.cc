#include "controller/core/scheduler.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
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
    if (common::ParseRuntimeKind(e.kind()) == p.runtime_kind() && e.location() == p.runtime_location()) {
      return true;
    }
  }
  return false;
}

bool IsDead(const Device& d, int64_t tolerance) {
  if (d.unreclaimed_bytes() > tolerance) return true;
  for (const auto& h : d.holders()) {
    if (h.holder_class() == dcufleet::v1::HOLDER_LEFTOVER ||
        h.holder_class() == dcufleet::v1::HOLDER_ZOMBIE) {
      return true;
    }
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
      holders.push_back(absl::StrCat("pid ", h.pid(), " `", cmd, h.cmdline().size() > 40 ? "…" : "",
                                     "`", h.parent_alive() ? "" : ", exited parent"));
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

// Plans of one arch, asked once per call.
struct ArchPlans {
  // As the knowledge gives them, stably sorted by rank.
  std::vector<Plan> plans;
  // Broken ones (knowledge) and, after them as they are met, stacks this
  // deployment already failed with.
  std::vector<Plan> excluded;
  // Plans this deployment may use (spec filters, not failed), rank order.
  std::vector<Plan> usable;
  int min_rank = INT_MAX;
};

// Why the quick check turned a node down (for the summary of unnamed nodes).
enum class Quick { kOk, kNotReady, kNoDevices, kNoArch, kNoStack, kNoTp, kDevices, kInstalled,
                   kModel, kOutranked };

const char* QuickName(Quick q) {
  switch (q) {
    case Quick::kNotReady: return "not Ready";
    case Quick::kNoDevices: return "no accelerators";
    case Quick::kNoArch: return "arch unknown";
    case Quick::kNoStack: return "no working stack for the arch";
    case Quick::kNoTp: return "no TP fits the device size";
    case Quick::kDevices: return "too few usable devices";
    case Quick::kInstalled: return "no usable stack installed";
    case Quick::kModel: return "model not on the node";
    case Quick::kOutranked: return "cannot rank higher than the chosen node";
    default: return "fits";
  }
}

struct Candidate {
  bool ok = false;
  std::string reason;
  const Plan* plan = nullptr;
  // Where the plan's env/image is on this node.
  std::string location;
  std::vector<int> devices;
  int tp = 0;
  int port = 0;
  std::string model_path;
  std::vector<std::string> explanation;
};

class Scheduler {
 public:
  explicit Scheduler(const ScheduleInput& in) : in_(in) {
    if (in_.spec.tp() > 0) {
      tps_.push_back(in_.spec.tp());
    } else {
      tps_ = in_.model.valid_tp;
      if (tps_.empty()) tps_ = {1, 2, 4, 8};
    }
  }

  ScheduleResult Run();

 private:
  const ArchPlans& PlansOf(const std::string& arch);
  const MemoryCheck& MemoryOf(int tp, int64_t total);
  std::string Where(const NodeView& node, const Plan& p);
  bool TpAllowed(int tp) const {
    return in_.model.valid_tp.empty() ||
           std::find(in_.model.valid_tp.begin(), in_.model.valid_tp.end(), tp) !=
               in_.model.valid_tp.end();
  }
  // The TPs (in order of preference) the model's heads allow whose memory
  // plan fits a device of `total`, with their plans.
  struct TotalFit {
    int64_t total = 0;
    std::vector<std::pair<int, const MemoryCheck*>> fits;
  };
  const TotalFit& FitsFor(int64_t total);
  // The smallest such TP; 0 when none.
  int MinTp(int64_t total) {
    const TotalFit& f = FitsFor(total);
    return f.fits.empty() ? 0 : f.fits.front().first;
  }
  // Whether `n` has enough free devices for some TP that fits (ignoring this
  // deployment's own avoidances, which only apply to it).
  bool CanHostAny(const ScheduleNode& n) {
    for (const auto& [tp, m] : FitsFor(n.device_total).fits) {
      if (tp > static_cast<int>(n.devices.size())) break;
      int good = 0;
      for (const auto& d : n.devices) {
        good += !d.dead && d.free >= m->required_free_bytes && !n.busy_devices.count(d.index);
      }
      if (good >= tp) return true;
    }
    return false;
  }
  bool DeviceUsable(const ScheduleNode& n, const ScheduleNode::Dev& d, int64_t required,
                    const std::set<int>* avoided) const {
    return !d.dead && d.free >= required && !n.busy_devices.count(d.index) &&
           !(avoided && avoided->count(d.index));
  }
  const std::set<int>* AvoidedOn(const ScheduleNode& n) const {
    if (in_.avoid_devices.empty()) return nullptr;
    auto it = in_.avoid_devices.find(n.view->name());
    return it == in_.avoid_devices.end() ? nullptr : &it->second;
  }
  // Cheap decision for one node: whether it can take the deployment and with
  // which (rank, TP); fills `c` when it can.
  Quick Check(const ScheduleNode& n, Candidate* c);
  // The full explanation of why `n` cannot take it (as `dcuctl` shows it).
  std::string Explain(const ScheduleNode& n);
  int PortFor(const ScheduleNode& n) const {
    int port = in_.port_base;
    while (n.busy_ports.count(port) || in_.avoid_ports.count(port)) ++port;
    return port;
  }

  const ScheduleInput& in_;
  std::vector<int> tps_;
  std::map<std::string, ArchPlans> arches_;
  std::map<std::pair<int, int64_t>, MemoryCheck> memory_;
  // Few distinct totals in a fleet: a short list beats a map.
  std::vector<std::unique_ptr<TotalFit>> totals_;
};

const ArchPlans& Scheduler::PlansOf(const std::string& arch) {
  auto [it, inserted] = arches_.try_emplace(arch);
  ArchPlans& a = it->second;
  if (!inserted) return a;
  if (in_.plans_for_arch) in_.plans_for_arch(arch, &a.plans, &a.excluded);
  std::stable_sort(a.plans.begin(), a.plans.end(),
                   [](const Plan& x, const Plan& y) { return x.rank() < y.rank(); });
  for (Plan p : a.plans) {
    if (!in_.spec.stack_id().empty() && p.stack_id() != in_.spec.stack_id()) continue;
    if (!in_.spec.runtime().empty() && common::ParseRuntimeKind(in_.spec.runtime()) != p.runtime_kind()) {
      continue;
    }
    if (in_.excluded_stacks.count(p.stack_id())) {
      p.set_excluded_reason("failed deterministically in this deployment");
      a.excluded.push_back(p);
      continue;
    }
    a.min_rank = std::min(a.min_rank, p.rank());
    a.usable.push_back(p);
  }
  return a;
}

std::string Scheduler::Where(const NodeView& node, const Plan& p) {
  if (in_.runtime_on_node) return in_.runtime_on_node(p, node);
  if (!HasEnvironment(node, p)) return "";
  return p.runtime_location().empty() ? std::string("-") : p.runtime_location();
}

const MemoryCheck& Scheduler::MemoryOf(int tp, int64_t total) {
  auto [it, inserted] = memory_.try_emplace({tp, total});
  if (inserted) it->second = in_.memory ? in_.memory(tp, total) : MemoryCheck{true, 0, {}, ""};
  return it->second;
}

const Scheduler::TotalFit& Scheduler::FitsFor(int64_t total) {
  for (const auto& t : totals_) {
    if (t->total == total) return *t;
  }
  auto t = std::make_unique<TotalFit>();
  t->total = total;
  for (int tp : tps_) {
    if (!TpAllowed(tp)) continue;
    const MemoryCheck& m = MemoryOf(tp, total);
    if (m.fits) t->fits.emplace_back(tp, &m);
  }
  totals_.push_back(std::move(t));
  return *totals_.back();
}

Quick Scheduler::Check(const ScheduleNode& n, Candidate* c) {
  if (!n.ready) return Quick::kNotReady;
  if (n.view->inventory().devices().empty()) return Quick::kNoDevices;
  if (n.arch.empty()) return Quick::kNoArch;
  const ArchPlans& ap = PlansOf(n.arch);
  if (ap.usable.empty()) return Quick::kNoStack;
  if (FitsFor(n.device_total).fits.empty()) return Quick::kNoTp;
  const std::set<int>* avoided = AvoidedOn(n);
  int chosen_tp = 0;
  const MemoryCheck* mem = nullptr;
  for (const auto& [tp, m] : FitsFor(n.device_total).fits) {
    if (tp > static_cast<int>(n.devices.size())) break;
    int good = 0;
    for (const auto& d : n.devices) good += DeviceUsable(n, d, m->required_free_bytes, avoided);
    if (good >= tp) {
      chosen_tp = tp;
      mem = m;
      break;
    }
  }
  if (!chosen_tp) return Quick::kDevices;
  const Plan* plan = nullptr;
  std::string location;
  for (const Plan& p : ap.usable) {
    location = Where(*n.view, p);
    if (!location.empty()) {
      plan = &p;
      break;
    }
  }
  if (!plan) return Quick::kInstalled;
  c->location = location == "-" ? "" : location;
  std::string path = in_.model_path_on_node ? in_.model_path_on_node(*n.view) : "";
  if (path.empty()) return Quick::kModel;
  c->ok = true;
  c->plan = plan;
  c->tp = chosen_tp;
  c->model_path = std::move(path);
  c->devices.clear();
  for (const auto& d : n.devices) {
    if (static_cast<int>(c->devices.size()) == chosen_tp) break;
    if (DeviceUsable(n, d, mem->required_free_bytes, avoided)) c->devices.push_back(d.index);
  }
  c->explanation = mem->explanation;
  return Quick::kOk;
}

std::string Scheduler::Explain(const ScheduleNode& n) {
  const NodeView& node = *n.view;
  const auto& spec = in_.spec;
  if (node.state() != dcufleet::v1::NODE_READY) {
    return absl::StrCat("node is ", node.state() == dcufleet::v1::NODE_LOST ? "Lost" : "NotReady",
                        node.state_reason().empty() ? "" : absl::StrCat(" (", node.state_reason(), ")"));
  }
  if (node.inventory().devices().empty()) return "no accelerators reported";
  if (n.arch.empty()) return "arch of its devices is unknown (see dcuctl describe node)";
  const ArchPlans& ap = PlansOf(n.arch);
  std::vector<std::string> plan_problems;
  bool any_usable = false;
  for (const Plan& p : ap.usable) {
    if (!Where(node, p).empty()) {
      any_usable = true;
    } else {
      plan_problems.push_back(absl::StrCat(p.stack_id(), " not installed"));
    }
  }
  if (!any_usable) {
    if (ap.plans.empty() && ap.excluded.empty()) {
      return absl::StrCat("arch ", n.arch, " has no known stack for ", spec.model());
    }
    if (ap.plans.empty() || plan_problems.empty()) {
      std::vector<std::string> why;
      for (const auto& p : ap.excluded) why.push_back(absl::StrCat(p.stack_id(), ": ", p.excluded_reason()));
      std::string reason = absl::StrCat("arch ", n.arch, " has no working stack for ", spec.model(),
                                        why.empty() ? "" : absl::StrCat(" (", absl::StrJoin(why, "; "), ")"));
      if (!spec.stack_id().empty() || !spec.runtime().empty()) {
        absl::StrAppend(&reason, " matching the requested",
                        spec.stack_id().empty() ? "" : absl::StrCat(" stack ", spec.stack_id()),
                        spec.runtime().empty() ? "" : absl::StrCat(" runtime ", spec.runtime()));
      }
      return reason;
    }
    std::string reason =
        absl::StrCat("no usable stack installed (", absl::StrJoin(plan_problems, "; "), ")");
    // Name every blocker at once: installing the stack alone would not do.
    if (in_.model_path_on_node && in_.model_path_on_node(node).empty()) {
      absl::StrAppend(&reason, "; model ", spec.model(), " not found under the node's model roots");
    }
    return reason;
  }
  if ((in_.model_path_on_node ? in_.model_path_on_node(node) : "").empty()) {
    return absl::StrCat("model ", spec.model(), " not found under the node's model roots");
  }
  std::vector<const Device*> devices;
  for (const Device& d : node.inventory().devices()) {
    if (d.arch() == n.arch) devices.push_back(&d);
  }
  const std::set<int>* avoided = AvoidedOn(n);
  std::string last_reason;
  for (int tp : tps_) {
    if (tp > static_cast<int>(devices.size())) {
      last_reason = absl::StrCat("TP=", tp, " needs ", tp, " devices, node has ", devices.size());
      break;
    }
    if (!TpAllowed(tp)) {
      last_reason = absl::StrCat("TP=", tp, " does not divide the model's attention heads (",
                                 in_.model.num_attention_heads, ")");
      continue;
    }
    const MemoryCheck& m = MemoryOf(tp, n.device_total);
    if (!m.fits) {
      last_reason = absl::StrCat("TP=", tp, ": ", m.reason);
      continue;
    }
    int good = 0;
    std::vector<std::string> problems;
    for (const Device* d : devices) {
      bool busy = n.busy_devices.count(d->index()) || (avoided && avoided->count(d->index()));
      std::string p = DeviceProblem(*d, m.required_free_bytes, in_.unreclaimed_tolerance_bytes, busy);
      if (p.empty()) {
        ++good;
      } else {
        problems.push_back(p);
      }
    }
    if (good >= tp) return "";  // it fits
    last_reason = absl::StrCat(good, " of ", devices.size(), " devices have ≥ ",
                               common::HumanBytes(m.required_free_bytes),
                               " free (device view) for TP=", tp,
                               problems.empty() ? "" : absl::StrCat("; ", absl::StrJoin(problems, "; ")));
  }
  return last_reason.empty() ? "no TP fits" : last_reason;
}

ScheduleResult Scheduler::Run() {
  ScheduleResult out;
  static const std::vector<ScheduleNode> kNone;
  const std::vector<ScheduleNode>& nodes = in_.nodes ? *in_.nodes : kNone;
  const bool pinned = !in_.spec.node().empty();
  out.first_usable = std::min(in_.first_node, nodes.size());
  size_t begin = pinned ? 0 : out.first_usable;
  // Lower bound of (rank, TP) over the fleet: once the chosen node reaches
  // it, no later node can rank higher (ties go to the earlier name).
  std::vector<std::pair<std::string, int64_t>> computed;
  if (!in_.shapes && !pinned) computed = FleetShapes(nodes);
  const auto& shapes = in_.shapes ? *in_.shapes : computed;
  bool any_node = false;
  std::pair<int, int> floor{INT_MAX, INT_MAX};
  for (const auto& [arch, total] : shapes) {
    const ArchPlans& ap = PlansOf(arch);
    int tp = MinTp(total);
    if (ap.usable.empty() || tp == 0) continue;
    floor = std::min(floor, std::make_pair(ap.min_rank, tp));
  }

  const ScheduleNode* best = nullptr;
  Candidate best_c;
  std::pair<int, int> best_rank{INT_MAX, INT_MAX};
  std::map<Quick, int64_t> unnamed;
  bool first_usable_known = false;
  Candidate c;
  // Explained after the walk (explaining costs string work), as many as
  // the outcome calls for.
  struct Rejected {
    const ScheduleNode* node;
    Quick quick;
    std::string reason;
  };
  std::vector<Rejected> rejected;
  auto reject = [&](const ScheduleNode& n, Quick q, std::string reason) {
    if (rejected.size() < in_.max_rejections) {
      rejected.push_back({&n, q, std::move(reason)});
    } else {
      ++unnamed[q];
    }
  };
  for (size_t i = begin; i < nodes.size(); ++i) {
    const ScheduleNode& n = nodes[i];
    if (pinned && n.view->name() != in_.spec.node()) continue;
    any_node = true;
    if (!first_usable_known) {
      // The first node with any device this spec's budget could use.
      // Enough free devices for some TP this spec could get on it (an
      // unknown arch or no fitting TP: a node this spec can never use).
      bool usable = n.ready && !n.arch.empty() && CanHostAny(n);
      if (usable || pinned) {
        first_usable_known = true;
        if (!pinned) out.first_usable = i;
      }
    }
    if (best && !pinned) {
      // Prune: this node's best possible (rank, TP) cannot beat the chosen.
      const ArchPlans* ap = n.arch.empty() ? nullptr : &PlansOf(n.arch);
      int tp = n.arch.empty() ? 0 : MinTp(n.device_total);
      if (!n.ready || !ap || ap->usable.empty() || tp == 0 ||
          std::make_pair(ap->min_rank, tp) >= best_rank) {
        ++unnamed[Quick::kOutranked];
        continue;
      }
    }
    Quick q = Check(n, &c);
    if (q != Quick::kOk) {
      reject(n, q, "");
      continue;
    }
    std::pair<int, int> rank{c.plan->rank(), c.tp};
    if (!best || rank < best_rank) {
      if (best) reject(*best, Quick::kOutranked, absl::StrCat("fits, but node '", n.view->name(), "' ranks higher"));
      best = &n;
      best_c = c;
      best_rank = rank;
      if (best_rank <= floor && !pinned) break;
    } else {
      reject(n, Quick::kOutranked, absl::StrCat("fits, but node '", best->view->name(), "' ranks higher"));
    }
  }
  if (!first_usable_known && !pinned) out.first_usable = nodes.size();
  size_t named = best ? std::min(in_.max_rejections_placed, in_.max_rejections) : in_.max_rejections;
  for (size_t k = 0; k < rejected.size(); ++k) {
    if (k >= named) {
      ++unnamed[rejected[k].quick];
      continue;
    }
    dcufleet::v1::NodeRejection r;
    r.set_node(rejected[k].node->view->name());
    r.set_reason(rejected[k].reason.empty() ? Explain(*rejected[k].node) : rejected[k].reason);
    out.rejections.push_back(std::move(r));
  }
  if (!any_node) {
    out.rejections.push_back(dcufleet::v1::NodeRejection());
    out.rejections.back().set_node(pinned ? in_.spec.node() : "(fleet)");
    out.rejections.back().set_reason(pinned ? "no such node" : "no nodes registered");
    return out;
  }
  int64_t more = begin;  // nodes before `first_node`: no usable device
  for (const auto& [q, count] : unnamed) more += count;
  if (more > 0) {
    std::vector<std::string> parts;
    if (begin > 0) parts.push_back(absl::StrCat(begin, " with no free usable device"));
    for (const auto& [q, count] : unnamed) parts.push_back(absl::StrCat(count, " ", QuickName(q)));
    dcufleet::v1::NodeRejection r;
    r.set_node(absl::StrCat("(", more, " more nodes)"));
    r.set_reason(absl::StrJoin(parts, ", "));
    out.rejections.push_back(std::move(r));
  }
  if (!best) {
    // Plans of the first arch seen, to show what would have been tried.
    for (size_t i = begin; i < nodes.size(); ++i) {
      if (nodes[i].arch.empty() || (pinned && nodes[i].view->name() != in_.spec.node())) continue;
      const ArchPlans& ap = PlansOf(nodes[i].arch);
      if (ap.plans.empty()) continue;
      out.plans = ap.plans;
      out.excluded_plans = ap.excluded;
      break;
    }
    return out;
  }
  const ArchPlans& ap = PlansOf(best->arch);
  out.placed = true;
  out.plan = *best_c.plan;
  if (!best_c.location.empty()) out.plan.set_runtime_location(best_c.location);
  out.plans = ap.plans;
  out.excluded_plans = ap.excluded;
  out.model_path = best_c.model_path;
  auto* p = &out.placement;
  p->set_node(best->view->name());
  p->set_arch(best_c.plan->arch().empty() ? best->arch : best_c.plan->arch());
  for (int d : best_c.devices) p->add_device_indices(d);
  p->set_tp(best_c.tp);
  p->set_port(PortFor(*best));
  for (const auto& line : best_c.explanation) p->add_memory_explanation(line);
  // Devices passed over on the chosen node, and why.
  std::vector<std::string> problems;
  const std::set<int>* avoided = AvoidedOn(*best);
  int64_t required = MemoryOf(best_c.tp, best->device_total).required_free_bytes;
  for (const Device& d : best->view->inventory().devices()) {
    if (d.arch() != best->arch) continue;
    bool busy = best->busy_devices.count(d.index()) || (avoided && avoided->count(d.index()));
    std::string why = DeviceProblem(d, required, in_.unreclaimed_tolerance_bytes, busy);
    if (!why.empty()) problems.push_back(why);
  }
  if (!problems.empty()) p->add_memory_explanation(absl::StrCat("avoided: ", absl::StrJoin(problems, "; ")));
  return out;
}

}  // namespace

ScheduleNode MakeScheduleNode(const NodeView& view, int64_t tolerance) {
  ScheduleNode n;
  n.view = &view;
  n.ready = view.state() == dcufleet::v1::NODE_READY;
  n.arch = NodeArch(view);
  bool first = true;
  for (const Device& d : view.inventory().devices()) {
    if (n.arch.empty() || d.arch() != n.arch) continue;
    if (first) n.device_total = TotalOf(d);
    first = false;
    n.devices.push_back({d.index(), FreeOf(d), IsDead(d, tolerance)});
  }
  for (const auto& i : view.instances()) {
    if (i.port() > 0) n.busy_ports.insert(i.port());
  }
  return n;
}

std::vector<std::pair<std::string, int64_t>> FleetShapes(const std::vector<ScheduleNode>& nodes) {
  std::set<std::pair<std::string, int64_t>> shapes;
  for (const auto& n : nodes) {
    if (n.ready && !n.arch.empty()) shapes.emplace(n.arch, n.device_total);
  }
  return {shapes.begin(), shapes.end()};
}

ScheduleResult Schedule(const ScheduleInput& in) { return Scheduler(in).Run(); }

}  // namespace dcu::controller
