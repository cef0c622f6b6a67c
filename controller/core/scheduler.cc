#include "controller/core/scheduler.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"
#include "common/holder_class.h"
#include "common/units.h"
#include "modelkit/memory_plan.h"

namespace dcu::controller {
namespace {

using dcufleet::v1::Device;
using dcufleet::v1::NodeView;
using dcufleet::v1::Plan;
using dcufleet::v1::Placement;
using Dev = ScheduleNode::Dev;

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

// Why a device is unusable whatever is asked (ScheduleNode::Dev::dead):
// modelkit's rule, kept here in the summary's one-byte form.
Dev::Dead DeadCause(const Device& d, int64_t tolerance) {
  switch (modelkit::DeviceBlockOf(d, tolerance)) {
    case modelkit::DeviceBlock::kStrandedMemory:
      return Dev::Dead::kUnreclaimed;
    case modelkit::DeviceBlock::kHolderToReap:
      return Dev::Dead::kLeftoverHolder;
    case modelkit::DeviceBlock::kNone:
      break;
  }
  return Dev::Dead::kNo;
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

// Plans of one arch, asked once per call. Pointers into the shared set: a
// call copies plans only into its result.
struct ArchPlans {
  ArchPlanSetPtr set;
  // set->plans as the knowledge gives them, stably sorted by rank.
  std::vector<const Plan*> plans;
  // Stacks this deployment already failed with (listed after the broken
  // ones of set->excluded).
  std::vector<Plan> failed_here;
  // Plans this deployment may use (spec filters, not failed), rank order.
  std::vector<const Plan*> usable;
  int min_rank = INT_MAX;
};

// The plans of `ap` into a result: ordered plans, then the excluded ones.
void CopyPlans(const ArchPlans& ap, ScheduleResult* out) {
  out->plans.clear();
  out->plans.reserve(ap.plans.size());
  for (const Plan* p : ap.plans) out->plans.push_back(*p);
  out->excluded_plans.assign(ap.set->excluded.begin(), ap.set->excluded.end());
  out->excluded_plans.insert(out->excluded_plans.end(), ap.failed_here.begin(), ap.failed_here.end());
}

// The verdict of one check of the fit rule: the node passes it, or the cause
// that keeps it from taking the deployment. The fast path reads it as a bool
// (and counts unnamed rejections by it); the explainer words it. The order
// is the order of the summary of unnamed nodes.
enum class Fit : uint8_t {
  kFits,
  kNotReady,
  // Ready, but its agent drains it (issue 20): nothing new goes there.
  kDraining,
  // Ready, but a person cordoned it (dcuctl cordon / drain).
  kCordoned,
  kNoDevices,
  kNoArch,
  kNoStack,
  kNoTp,
  kTooFewDevices,
  kNotInstalled,
  kNoModel,
  // Not a check: the node was not looked at, or fits but another ranks higher.
  kOutranked,
};

const char* SummaryName(Fit f) {
  switch (f) {
    case Fit::kNotReady: return "not Ready";
    case Fit::kDraining: return "draining";
    case Fit::kCordoned: return "cordoned";
    case Fit::kNoDevices: return "no accelerators";
    case Fit::kNoArch: return "arch unknown";
    case Fit::kNoStack: return "no working stack for the arch";
    case Fit::kNoTp: return "no TP fits the device size";
    case Fit::kTooFewDevices: return "too few usable devices";
    case Fit::kNotInstalled: return "no usable stack installed";
    case Fit::kNoModel: return "model not on the node";
    case Fit::kOutranked: return "cannot rank higher than the chosen node";
    default: return "fits";
  }
}

// The verdict on one device for a memory requirement.
enum class DeviceFit : uint8_t { kUsable, kTaken, kDead, kLowFree };

// One TP of the request on devices of one size: whether the model's heads
// allow it and its memory plan fits.
struct TpOption {
  int tp = 0;
  bool allowed = false;
  // The memory plan (null when the heads do not allow the TP).
  const MemoryCheck* memory = nullptr;
  bool fits() const { return allowed && memory->fits; }
};

// The TPs of the request, in order of preference, on devices of `total`.
struct TotalFit {
  int64_t total = 0;
  std::vector<TpOption> options;
  // The first option that fits; 0 when none (no TP fits the device size).
  int min_tp = 0;
};

// What the device check chose.
struct TpChoice {
  int tp = 0;
  const MemoryCheck* memory = nullptr;
};

// The chosen plan and where its env/image is on the node.
struct Installed {
  const Plan* plan = nullptr;
  std::string location;
};

struct Candidate {
  Installed installed;
  TpChoice choice;
  std::vector<int> devices;
  std::string model_path;
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
  // The full explanation of why `n` cannot take it (as `dcuctl` shows it);
  // "" when it can.
  std::string Explain(const ScheduleNode& n);

 private:
  // --- The fit rule: one predicate per check. A node fits iff every check
  // passes; Check asks them cheapest first, Explain in the order a person
  // fixes them, so the order decides which cause is named, never whether the
  // node fits. The cursor asks the checks that do not depend on this
  // deployment's own plans and avoidances.

  // Ready, devices reported, their arch known.
  Fit CheckNode(const ScheduleNode& n) const;
  // A plan this deployment may use exists for the arch.
  static Fit CheckStack(const ArchPlans& ap) {
    return ap.usable.empty() ? Fit::kNoStack : Fit::kFits;
  }
  // The best-ranked such plan whose env/image the node has.
  Fit CheckInstalled(const ScheduleNode& n, const ArchPlans& ap, Installed* out);
  // The model's directory is on the node.
  Fit CheckModel(const ScheduleNode& n, std::string* path) const;
  // The first TP of the request whose memory plan fits the device size and
  // for which the node has that many usable devices (`avoided` excluded).
  // `why`, when given, gets the reason the last TP tried failed.
  Fit CheckDevices(const ScheduleNode& n, const std::set<int>* avoided, TpChoice* out,
                   std::string* why);
  // One device against a requirement: Usable is the predicate, CheckDevice
  // names the cause when it fails.
  static bool Usable(const ScheduleNode& n, const Dev& d, int64_t required,
                     const std::set<int>* avoided) {
    return d.dead == Dev::Dead::kNo && d.free >= required && !Taken(n, d, avoided);
  }
  static DeviceFit CheckDevice(const ScheduleNode& n, const Dev& d, int64_t required,
                               const std::set<int>* avoided) {
    if (Usable(n, d, required, avoided)) return DeviceFit::kUsable;
    if (Taken(n, d, avoided)) return DeviceFit::kTaken;
    if (d.dead != Dev::Dead::kNo) return DeviceFit::kDead;
    return DeviceFit::kLowFree;
  }
  static bool Taken(const ScheduleNode& n, const Dev& d, const std::set<int>* avoided) {
    return n.busy_devices.count(d.index) || (avoided && avoided->count(d.index));
  }

  // --- Built from the checks.

  // The fast path: whether `n` can take the deployment; fills `c` when so.
  Fit Check(const ScheduleNode& n, Candidate* c);
  // The cursor's question: enough free devices for some TP this spec could
  // get on `n`, whatever this deployment avoids or has installed.
  bool HostsAnyTp(const ScheduleNode& n) {
    TpChoice unused;
    return CheckNode(n) == Fit::kFits && CheckDevices(n, nullptr, &unused, nullptr) == Fit::kFits;
  }
  // The best (plan rank, TP) a node of (arch, total) could reach; INT_MAX
  // when none. The early stop and the skipping of nodes read it.
  // A placement's rank, lower is better: the plan's rank, then how many of
  // the deployment's replicas the node already runs (spread across nodes
  // before devices), then the TP (fewer devices).
  using Rank = std::tuple<int, int, int>;
  static constexpr Rank kNoRank{INT_MAX, INT_MAX, INT_MAX};
  int ReplicasOn(const ScheduleNode& n) const {
    if (!in_.replicas_on_node || in_.replicas_on_node->empty()) return 0;
    auto it = in_.replicas_on_node->find(n.view->name());
    return it == in_.replicas_on_node->end() ? 0 : it->second;
  }
  // The best rank a node of (arch, total) could reach with `replicas` of
  // the deployment on it.
  Rank Reach(const std::string& arch, int64_t total, int replicas = 0) {
    const ArchPlans& ap = PlansOf(arch);
    int tp = FitsFor(total).min_tp;
    if (CheckStack(ap) != Fit::kFits || tp == 0) return kNoRank;
    return {ap.min_rank, replicas, tp};
  }
  bool CanReachBelow(const ScheduleNode& n, Rank rank) {
    return n.block == modelkit::NodeBlock::kNone && !n.arch.empty() &&
           Reach(n.arch, n.device_total, ReplicasOn(n)) < rank;
  }

  // --- Words.
  std::string NodeText(const ScheduleNode& n, Fit f) const;
  std::string NoModelText(const ScheduleNode& n) const;
  std::string NoStackText(const ScheduleNode& n, const ArchPlans& ap) const;
  std::string DevicesText(const ScheduleNode& n, const TpOption& o, const std::set<int>* avoided,
                          int good) const;
  std::string DeviceText(const ScheduleNode& n, const Dev& d, DeviceFit f,
                         int64_t required) const;
  // Devices of the chosen node passed over, and why, noted on `p`.
  void NoteAvoided(const ScheduleNode& n, const TpChoice& t, Placement* p) const;

  // --- Knowledge, asked once per call.
  const ArchPlans& PlansOf(const std::string& arch);
  const MemoryCheck& MemoryOf(int tp, int64_t total);
  const TotalFit& FitsFor(int64_t total);
  std::string Where(const NodeView& node, const Plan& p);
  bool TpAllowed(int tp) const {
    return in_.model.valid_tp.empty() ||
           std::find(in_.model.valid_tp.begin(), in_.model.valid_tp.end(), tp) !=
               in_.model.valid_tp.end();
  }
  const std::set<int>* AvoidedOn(const ScheduleNode& n) const {
    if (in_.avoid_devices.empty()) return nullptr;
    auto it = in_.avoid_devices.find(n.view->name());
    return it == in_.avoid_devices.end() ? nullptr : &it->second;
  }
  int PortFor(const ScheduleNode& n) const {
    // Ports other services hold on the node, as its agent read them
    // (ascending: validated on arrival).
    const auto& foreign = n.view->inventory().foreign_listen_ports();
    int port = in_.port_base;
    while (n.busy_ports.count(port) || in_.avoid_ports.count(port) ||
           (n.host_ports && n.host_ports->contains(port)) ||
           std::binary_search(foreign.begin(), foreign.end(), port)) {
      ++port;
    }
    return port;
  }

  const ScheduleInput& in_;
  std::vector<int> tps_;
  std::map<std::string, ArchPlans> arches_;
  std::map<std::pair<int, int64_t>, MemoryCheckPtr> memory_;
  // Few distinct totals in a fleet: a short list beats a map.
  std::vector<std::unique_ptr<TotalFit>> totals_;
};

const ArchPlans& Scheduler::PlansOf(const std::string& arch) {
  auto [it, inserted] = arches_.try_emplace(arch);
  ArchPlans& a = it->second;
  if (!inserted) return a;
  if (in_.plans_for_arch) a.set = in_.plans_for_arch(arch);
  if (!a.set) {
    static const ArchPlanSetPtr kNone = std::make_shared<const ArchPlanSet>();
    a.set = kNone;
  }
  a.plans.reserve(a.set->plans.size());
  for (const Plan& p : a.set->plans) a.plans.push_back(&p);
  std::stable_sort(a.plans.begin(), a.plans.end(),
                   [](const Plan* x, const Plan* y) { return x->rank() < y->rank(); });
  for (const Plan* p : a.plans) {
    if (!in_.spec.stack_id().empty() && p->stack_id() != in_.spec.stack_id()) continue;
    if (!in_.spec.runtime().empty() && common::ParseRuntimeKind(in_.spec.runtime()) != p->runtime_kind()) {
      continue;
    }
    if (in_.excluded_stacks.count(p->stack_id())) {
      Plan& failed = a.failed_here.emplace_back(*p);
      failed.set_excluded_reason("failed deterministically in this deployment");
      continue;
    }
    a.min_rank = std::min(a.min_rank, p->rank());
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
  if (inserted && in_.memory) it->second = in_.memory(tp, total);
  if (!it->second) {
    static const MemoryCheckPtr kFitsFree =
        std::make_shared<const MemoryCheck>(MemoryCheck{true, 0, {}, ""});
    it->second = kFitsFree;
  }
  return *it->second;
}

const TotalFit& Scheduler::FitsFor(int64_t total) {
  for (const auto& t : totals_) {
    if (t->total == total) return *t;
  }
  auto t = std::make_unique<TotalFit>();
  t->total = total;
  for (int tp : tps_) {
    TpOption o;
    o.tp = tp;
    o.allowed = TpAllowed(tp);
    if (o.allowed) o.memory = &MemoryOf(tp, total);
    if (o.fits() && t->min_tp == 0) t->min_tp = tp;
    t->options.push_back(o);
  }
  totals_.push_back(std::move(t));
  return *totals_.back();
}

// --- The checks.

Fit Scheduler::CheckNode(const ScheduleNode& n) const {
  switch (n.block) {
    case modelkit::NodeBlock::kNotReady: return Fit::kNotReady;
    case modelkit::NodeBlock::kAgentDrain: return Fit::kDraining;
    case modelkit::NodeBlock::kCordoned: return Fit::kCordoned;
    case modelkit::NodeBlock::kNone: break;
  }
  if (n.view->inventory().devices().empty()) return Fit::kNoDevices;
  if (n.arch.empty()) return Fit::kNoArch;
  return Fit::kFits;
}

Fit Scheduler::CheckInstalled(const ScheduleNode& n, const ArchPlans& ap, Installed* out) {
  for (const Plan* p : ap.usable) {
    std::string location = Where(*n.view, *p);
    if (!location.empty()) {
      out->plan = p;
      out->location = location == "-" ? "" : std::move(location);
      return Fit::kFits;
    }
  }
  return Fit::kNotInstalled;
}

Fit Scheduler::CheckModel(const ScheduleNode& n, std::string* path) const {
  *path = in_.model_path_on_node ? in_.model_path_on_node(*n.view) : "";
  return path->empty() ? Fit::kNoModel : Fit::kFits;
}

Fit Scheduler::CheckDevices(const ScheduleNode& n, const std::set<int>* avoided, TpChoice* out,
                            std::string* why) {
  const TotalFit& fit = FitsFor(n.device_total);
  const int devices = static_cast<int>(n.devices.size());
  for (const TpOption& o : fit.options) {
    if (o.tp > devices) {
      if (why) *why = absl::StrCat("TP=", o.tp, " needs ", o.tp, " devices, node has ", devices);
      break;
    }
    if (!o.allowed) {
      if (why) {
        *why = absl::StrCat("TP=", o.tp, " does not divide the model's attention heads (",
                            in_.model.num_attention_heads, ")");
      }
      continue;
    }
    if (!o.memory->fits) {
      if (why) *why = absl::StrCat("TP=", o.tp, ": ", o.memory->reason);
      continue;
    }
    int good = 0;
    for (const Dev& d : n.devices) good += Usable(n, d, o.memory->required_free_bytes, avoided);
    if (good >= o.tp) {
      *out = {o.tp, o.memory};
      return Fit::kFits;
    }
    if (why) *why = DevicesText(n, o, avoided, good);
  }
  return fit.min_tp == 0 ? Fit::kNoTp : Fit::kTooFewDevices;
}

// --- Built from the checks.

Fit Scheduler::Check(const ScheduleNode& n, Candidate* c) {
  if (Fit f = CheckNode(n); f != Fit::kFits) return f;
  const ArchPlans& ap = PlansOf(n.arch);
  if (Fit f = CheckStack(ap); f != Fit::kFits) return f;
  // Devices before the env and the model: asking the knowledge where a
  // stack or model is costs more than counting devices.
  const std::set<int>* avoided = AvoidedOn(n);
  if (Fit f = CheckDevices(n, avoided, &c->choice, nullptr); f != Fit::kFits) return f;
  if (Fit f = CheckInstalled(n, ap, &c->installed); f != Fit::kFits) return f;
  // The devices before the model: a node that passes every check but the
  // model's is a complete copy-first candidate.
  c->devices.clear();
  for (const Dev& d : n.devices) {
    if (static_cast<int>(c->devices.size()) == c->choice.tp) break;
    if (Usable(n, d, c->choice.memory->required_free_bytes, avoided)) c->devices.push_back(d.index);
  }
  return CheckModel(n, &c->model_path);
}

std::string Scheduler::Explain(const ScheduleNode& n) {
  if (Fit f = CheckNode(n); f != Fit::kFits) return NodeText(n, f);
  const ArchPlans& ap = PlansOf(n.arch);
  if (CheckStack(ap) != Fit::kFits) return NoStackText(n, ap);
  Installed installed;
  std::string path;
  const bool has_stack = CheckInstalled(n, ap, &installed) == Fit::kFits;
  const bool has_model = CheckModel(n, &path) == Fit::kFits;
  if (!has_stack) {
    std::vector<std::string> missing;
    for (const Plan* p : ap.usable) missing.push_back(absl::StrCat(p->stack_id(), " not installed"));
    std::string reason = absl::StrCat("no usable stack installed (", absl::StrJoin(missing, "; "), ")");
    // Name every blocker at once: installing the stack alone would not do.
    if (!has_model) absl::StrAppend(&reason, "; ", NoModelText(n));
    return reason;
  }
  if (!has_model) return NoModelText(n);
  std::string why;
  TpChoice choice;
  if (CheckDevices(n, AvoidedOn(n), &choice, &why) == Fit::kFits) return "";
  return why.empty() ? "no TP fits" : why;
}

// --- Words.

std::string Scheduler::NodeText(const ScheduleNode& n, Fit f) const {
  const NodeView& node = *n.view;
  switch (f) {
    case Fit::kNotReady:
      return absl::StrCat("node is ", node.state() == dcufleet::v1::NODE_LOST ? "Lost" : "NotReady",
                          node.state_reason().empty() ? "" : absl::StrCat(" (", node.state_reason(), ")"));
    case Fit::kDraining:
      return absl::StrCat("node is draining (", node.drain().reason(), ")");
    case Fit::kCordoned:
      return absl::StrCat("node is cordoned", node.cordon().reason().empty() ? "" : " (" + node.cordon().reason() + ")",
                          "; dcuctl uncordon ", node.name(), " takes replicas there again");
    case Fit::kNoDevices: return "no accelerators reported";
    case Fit::kNoArch: return "arch of its devices is unknown (see dcuctl describe node)";
    default: return SummaryName(f);
  }
}

std::string Scheduler::NoModelText(const ScheduleNode& n) const {
  // A copy that is there but damaged is named with its first problem, so the
  // operator knows which file on which node to fix (issue 19).
  std::string damage = in_.model_damage_on_node ? in_.model_damage_on_node(*n.view) : "";
  if (!damage.empty()) return damage;
  return absl::StrCat("model ", in_.spec.model(), " not found under the node's model roots");
}

std::string Scheduler::NoStackText(const ScheduleNode& n, const ArchPlans& ap) const {
  const auto& spec = in_.spec;
  if (ap.plans.empty() && ap.set->excluded.empty()) {
    return absl::StrCat("arch ", n.arch, " has no known stack for ", spec.model());
  }
  std::vector<std::string> why;
  for (const auto& p : ap.set->excluded) why.push_back(absl::StrCat(p.stack_id(), ": ", p.excluded_reason()));
  for (const auto& p : ap.failed_here) why.push_back(absl::StrCat(p.stack_id(), ": ", p.excluded_reason()));
  std::string reason = absl::StrCat("arch ", n.arch, " has no working stack for ", spec.model(),
                                    why.empty() ? "" : absl::StrCat(" (", absl::StrJoin(why, "; "), ")"));
  if (!spec.stack_id().empty() || !spec.runtime().empty()) {
    absl::StrAppend(&reason, " matching the requested",
                    spec.stack_id().empty() ? "" : absl::StrCat(" stack ", spec.stack_id()),
                    spec.runtime().empty() ? "" : absl::StrCat(" runtime ", spec.runtime()));
  }
  return reason;
}

std::string Scheduler::DevicesText(const ScheduleNode& n, const TpOption& o,
                                   const std::set<int>* avoided, int good) const {
  const int64_t required = o.memory->required_free_bytes;
  std::vector<std::string> problems;
  for (const Dev& d : n.devices) {
    DeviceFit f = CheckDevice(n, d, required, avoided);
    if (f != DeviceFit::kUsable) problems.push_back(DeviceText(n, d, f, required));
  }
  return absl::StrCat(good, " of ", n.devices.size(), " devices have ≥ ",
                      common::HumanBytes(required), " free (device view) for TP=", o.tp,
                      problems.empty() ? "" : absl::StrCat("; ", absl::StrJoin(problems, "; ")));
}

std::string Scheduler::DeviceText(const ScheduleNode& n, const Dev& d, DeviceFit f,
                                  int64_t required) const {
  const Device& pd = n.view->inventory().devices(d.slot);
  switch (f) {
    case DeviceFit::kTaken:
      return modelkit::DevicesRunningOthersText({static_cast<int32_t>(d.index)});
    case DeviceFit::kDead:
      if (d.dead == Dev::Dead::kUnreclaimed) {
        // The figures a person checks against the engine's own complaint
        // ("Free memory on device (4.8/63.98 GiB)").
        std::string why = absl::StrCat("device ", d.index, " holds ",
                                       common::HumanBytes(pd.unreclaimed_bytes()), " unreclaimed (",
                                       common::HumanBytes(d.free), " of ",
                                       common::HumanBytes(TotalOf(pd)), " free)");
        std::vector<std::string> holders;
        for (const auto& h : pd.holders()) {
          if (h.holder_class() == dcufleet::v1::HOLDER_MANAGED) continue;
          if (h.holder_class() == dcufleet::v1::HOLDER_EXITED) {
            holders.push_back(absl::StrCat("pid ", h.pid(), " exited, its record outlived it"));
            continue;
          }
          std::string cmd = h.cmdline().substr(0, 40);
          holders.push_back(absl::StrCat("pid ", h.pid(), " `", cmd, h.cmdline().size() > 40 ? "…" : "",
                                         "`", h.parent_alive() ? "" : ", exited parent"));
        }
        if (!holders.empty()) absl::StrAppend(&why, " (", absl::StrJoin(holders, "; "), ")");
        return why;
      }
      for (const auto& h : pd.holders()) {
        if (common::HolderToReap(h.holder_class())) return absl::StrCat("device ", d.index, " is held by leftover pid ", h.pid());
      }
      return absl::StrCat("device ", d.index, " is held by a leftover process");
    case DeviceFit::kLowFree:
      return absl::StrCat("device ", d.index, " has ", common::HumanBytes(d.free), " free (",
                          pd.schedulable_free().valid() ? pd.schedulable_free().source() : "total",
                          "), needs ", common::HumanBytes(required));
    default:
      return "";
  }
}

void Scheduler::NoteAvoided(const ScheduleNode& n, const TpChoice& t, Placement* p) const {
  const std::set<int>* avoided = AvoidedOn(n);
  const int64_t required = t.memory->required_free_bytes;
  for (const Dev& d : n.devices) {
    DeviceFit f = CheckDevice(n, d, required, avoided);
    if (f == DeviceFit::kTaken) {
      // The common case, kept as a number: half of a full node's placements.
      p->add_devices_in_use(d.index);
    } else if (f != DeviceFit::kUsable) {
      p->add_devices_avoided(DeviceText(n, d, f, required));
    }
  }
}

// --- The walk.

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
  Rank floor = kNoRank;
  for (const auto& [arch, total] : shapes) floor = std::min(floor, Reach(arch, total));

  bool any_node = false;
  const ScheduleNode* best = nullptr;
  Candidate best_c;
  Rank best_rank = kNoRank;
  std::map<Fit, int64_t> unnamed;
  bool first_usable_known = false;
  Candidate c;
  // Explained after the walk (explaining costs string work), as many as
  // the outcome calls for.
  struct Rejected {
    const ScheduleNode* node;
    Fit fit;
    std::string reason;
  };
  std::vector<Rejected> rejected;
  // Nodes that pass every check but the model's, with their candidate.
  struct Copyable {
    const ScheduleNode* node;
    Candidate c;
    Rank rank;
    size_t order;
  };
  std::vector<Copyable> copyable;
  auto reject = [&](const ScheduleNode& n, Fit f, std::string reason) {
    if (rejected.size() < in_.max_rejections) {
      rejected.push_back({&n, f, std::move(reason)});
    } else {
      ++unnamed[f];
    }
  };
  for (size_t i = begin; i < nodes.size(); ++i) {
    const ScheduleNode& n = nodes[i];
    if (pinned && n.view->name() != in_.spec.node()) continue;
    any_node = true;
    if (!first_usable_known && (pinned || HostsAnyTp(n))) {
      // The first node with any device this spec's budget could use.
      first_usable_known = true;
      if (!pinned) out.first_usable = i;
    }
    if (best && !pinned && !CanReachBelow(n, best_rank)) {
      ++unnamed[Fit::kOutranked];
      continue;
    }
    Fit f = Check(n, &c);
    if (f == Fit::kNoModel && in_.model_copy_to_node) {
      // Only the model is missing: a copy-first placement if no node that
      // has the model fits (decided after the walk).
      copyable.push_back({&n, c, Rank{c.installed.plan->rank(), ReplicasOn(n), c.choice.tp}, i});
      continue;
    }
    if (f != Fit::kFits) {
      reject(n, f, "");
      continue;
    }
    Rank rank{c.installed.plan->rank(), ReplicasOn(n), c.choice.tp};
    if (!best || rank < best_rank) {
      if (best) reject(*best, Fit::kOutranked, absl::StrCat("fits, but node '", n.view->name(), "' ranks higher"));
      best = &n;
      best_c = c;
      best_rank = rank;
      if (best_rank <= floor && !pinned) break;
    } else {
      reject(n, Fit::kOutranked, absl::StrCat("fits, but node '", best->view->name(), "' ranks higher"));
    }
  }
  if (!first_usable_known && !pinned) out.first_usable = nodes.size();
  // No node with the model fits: the best node that can get a copy takes
  // it, copy first (issue 19). Nodes with the model always win, so a copy
  // is made only when it is the only way to place the deployment.
  const bool with_model = best != nullptr;
  const Copyable* copy_to = nullptr;
  std::sort(copyable.begin(), copyable.end(), [](const Copyable& a, const Copyable& b) {
    return std::tie(a.rank, a.order) < std::tie(b.rank, b.order);
  });
  // NOT_FOUND says no source has the model for any node: the rest are
  // not asked (a fleet without the model would cost a question per node).
  bool no_source = false;
  for (const Copyable& k : copyable) {
    if (no_source) {
      reject(*k.node, Fit::kNoModel, "");
      continue;
    }
    if (with_model || copy_to) {
      reject(*k.node, Fit::kNoModel,
             with_model ? "" : absl::StrCat(NoModelText(*k.node), "; node '", copy_to->node->view->name(),
                                            "' ranks higher for a copy"));
      continue;
    }
    auto plan = in_.model_copy_to_node(*k.node->view);
    if (!plan.ok()) {
      no_source = absl::IsNotFound(plan.status());
      reject(*k.node, Fit::kNoModel,
             absl::StrCat(NoModelText(*k.node), "; cannot copy it here: ", plan.status().message()));
      continue;
    }
    copy_to = &k;
    out.copy = *std::move(plan);
  }
  if (copy_to) {
    best = copy_to->node;
    best_c = copy_to->c;
    best_rank = copy_to->rank;
  }
  // Nothing fits: the nodes the cursor skipped (no usable device for any
  // deployment's budget, e.g. NotReady) are named too, as far as the
  // rejection budget goes — "no free usable device" says less than
  // "node is NotReady", and with only skipped nodes nothing would be named.
  size_t skipped_named = 0;
  if (!best && !pinned) {
    std::vector<Rejected> prefix;
    for (size_t i = 0; i < begin && rejected.size() + prefix.size() < in_.max_rejections; ++i) {
      Fit f = CheckNode(nodes[i]);
      prefix.push_back({&nodes[i], f == Fit::kFits ? Fit::kTooFewDevices : f, ""});
    }
    skipped_named = prefix.size();
    // In fleet order, before the walked nodes.
    rejected.insert(rejected.begin(), prefix.begin(), prefix.end());
    any_node = any_node || begin > 0;
  }
  // A copy-first placement names the nodes with the model that could not
  // take it: that is why a copy is made.
  size_t named = with_model ? std::min(in_.max_rejections_placed, in_.max_rejections) : in_.max_rejections;
  for (size_t k = 0; k < rejected.size(); ++k) {
    if (k >= named) {
      ++unnamed[rejected[k].fit];
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
  // Nodes before `first_node` not named above: no usable device.
  const int64_t skipped_unnamed = static_cast<int64_t>(begin - skipped_named);
  int64_t more = skipped_unnamed;
  for (const auto& [f, count] : unnamed) more += count;
  if (more > 0) {
    std::vector<std::string> parts;
    if (skipped_unnamed > 0) parts.push_back(absl::StrCat(skipped_unnamed, " with no free usable device"));
    for (const auto& [f, count] : unnamed) parts.push_back(absl::StrCat(count, " ", SummaryName(f)));
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
      CopyPlans(ap, &out);
      break;
    }
    return out;
  }
  const ArchPlans& ap = PlansOf(best->arch);
  const Plan& plan = *best_c.installed.plan;
  out.placed = true;
  out.plan = plan;
  if (!best_c.installed.location.empty()) out.plan.set_runtime_location(best_c.installed.location);
  CopyPlans(ap, &out);
  out.model_path = best_c.model_path;
  if (copy_to) {
    out.kind = PlacementKind::kCopyFirst;
    out.model_path.clear();
    out.reason = absl::StrCat(pinned ? absl::StrCat("node '", best->view->name(), "' lacks ", in_.spec.model())
                                     : absl::StrCat("no node that has ", in_.spec.model(), " can take it"),
                              "; node '", best->view->name(), "' can once it copies ", out.copy.model_dir,
                              " from ", out.copy.From());
  }
  auto* p = &out.placement;
  p->set_node(best->view->name());
  p->set_arch(plan.arch().empty() ? best->arch : plan.arch());
  for (int d : best_c.devices) p->add_device_indices(d);
  p->set_tp(best_c.choice.tp);
  p->set_port(PortFor(*best));
  *p->mutable_memory_plan() = best_c.choice.memory->plan;
  NoteAvoided(*best, best_c.choice, p);
  return out;
}

}  // namespace

ScheduleNode MakeScheduleNode(const NodeView& view, int64_t tolerance) {
  ScheduleNode n;
  n.view = &view;
  n.block = modelkit::NodeBlockOf(view);
  n.ready = n.block != modelkit::NodeBlock::kNotReady;
  n.arch = NodeArch(view);
  const auto& devices = view.inventory().devices();
  for (int slot = 0; slot < devices.size(); ++slot) {
    const Device& d = devices[slot];
    if (n.arch.empty() || d.arch() != n.arch) continue;
    if (n.devices.empty()) n.device_total = TotalOf(d);
    n.devices.push_back({d.index(), slot, FreeOf(d), DeadCause(d, tolerance)});
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

std::string WhyNot(const ScheduleInput& in, const ScheduleNode& node) {
  return Scheduler(in).Explain(node);
}

}  // namespace dcu::controller
