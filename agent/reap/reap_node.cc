#include "agent/reap/reap_node.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agent/probe/findings.h"
#include "agent/procscan/proc_scanner.h"
#include "common/fs_util.h"
#include "common/proc_stat.h"

namespace dcu::agent {

using dcufleet::v1::NodeInventory;

namespace {

// Pids of `before`'s holders that have ended since (gone, or a zombie).
absl::flat_hash_set<int> EndedHolders(const NodeInventory& before, const std::string& proc_root) {
  absl::flat_hash_set<int> ended;
  auto check = [&](const dcufleet::v1::ProcessHolder& h) {
    auto st = common::ReadProcStat(proc_root, h.pid());
    if (!st.ok() || (h.start_time_ticks() != 0 && st->start_ticks != h.start_time_ticks()) ||
        st->state == 'Z' || st->state == 'X') {
      ended.insert(h.pid());
    }
  };
  for (const auto& d : before.devices()) {
    for (const auto& h : d.holders()) check(h);
  }
  for (const auto& h : before.unattributed_holders()) check(h);
  return ended;
}

// Ended pids the vendor library still lists (the driver has not released
// their memory yet).
std::vector<int> StillListed(const NodeInventory& inv, const absl::flat_hash_set<int>& ended) {
  std::vector<int> out;
  for (const auto& d : inv.devices()) {
    for (const auto& p : d.vendor_processes()) {
      if (ended.contains(p.pid())) out.push_back(p.pid());
    }
  }
  return out;
}

}  // namespace

dcufleet::v1::ReapReport ReapNode(InventoryCollector* collector, const ReapOptions& options) {
  NodeInventory before = collector->CollectFull();
  Reaper reaper;
  std::string settle_note;
  auto report = reaper.Reap(before, options, [&]() -> absl::StatusOr<NodeInventory> {
    const absl::Time start = absl::Now();
    const absl::flat_hash_set<int> ended = EndedHolders(before, options.proc_root);
    while (true) {
      collector->InvalidateDeviceView();
      NodeInventory after = collector->CollectFull();
      std::vector<int> pending = StillListed(after, ended);
      const absl::Duration waited = absl::Now() - start;
      if (pending.empty()) {
        if (!settle_note.empty()) {
          absl::StrAppend(&settle_note, "; released within ",
                          absl::FormatDuration(absl::Trunc(waited, absl::Milliseconds(1))));
        }
        return after;
      }
      if (settle_note.empty()) {
        settle_note = absl::StrCat("the driver still listed ended pid(s) ", absl::StrJoin(pending, ","),
                                   " with their memory at the first measurement after the reap");
      }
      if (waited >= options.settle_timeout) {
        absl::StrAppend(&settle_note, "; still listed after ", absl::FormatDuration(options.settle_timeout));
        return after;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  if (!settle_note.empty()) *report.add_findings() = MakeFinding(kInfo, "driver_release_lag", "reprobe", settle_note);
  return report;
}

}  // namespace dcu::agent
