#include "agent/reap/reaper.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/probe/findings.h"
#include "agent/procscan/proc_scanner.h"
#include "common/proc_stat.h"
#include "common/units.h"

namespace dcu::agent {
namespace {

using dcufleet::v1::HolderClass;
using dcufleet::v1::ProcessHolder;
using dcufleet::v1::ReapAction;
using dcufleet::v1::ReapReport;

enum class Life { kRunning, kEnded, kReused };

// Ended means: gone from /proc, a zombie now (its memory is released; the
// parent only has to collect the exit status), or the pid now belongs to a
// process with another start time.
Life Check(const std::string& proc_root, int pid, uint64_t start_ticks, std::string* detail) {
  auto st = common::ReadProcStat(proc_root, pid);
  if (!st.ok()) {
    *detail = "gone";
    return Life::kEnded;
  }
  if (start_ticks != 0 && st->start_ticks != start_ticks) {
    *detail = "pid reused by another process";
    return Life::kReused;
  }
  if (st->state == 'Z' || st->state == 'X') {
    *detail = "ended (zombie until its parent collects it)";
    return Life::kEnded;
  }
  *detail = "still running";
  return Life::kRunning;
}

}  // namespace

ReapReport Reaper::Reap(const dcufleet::v1::NodeInventory& before, const ReapOptions& options,
                        const std::function<absl::StatusOr<dcufleet::v1::NodeInventory>()>& reprobe) {
  ReapReport report;
  report.set_dry_run(options.dry_run);
  report.set_include_unmanaged(options.include_unmanaged);
  report.set_grace_ms(absl::ToInt64Milliseconds(options.grace));
  report.set_started_at_ms(absl::ToUnixMillis(clock_->Now()));

  // One entry per pid, whatever number of devices it holds.
  std::map<int, ProcessHolder> holders;
  for (const auto& d : before.devices()) {
    for (const auto& h : d.holders()) holders.emplace(h.pid(), h);
  }
  for (const auto& h : before.unattributed_holders()) holders.emplace(h.pid(), h);

  const int self = getpid();
  std::vector<std::pair<int, ReapAction*>> targets;  // pid, its sigterm action
  for (const auto& [pid, h] : holders) {
    ReapAction a;
    a.set_pid(pid);
    a.set_cmdline(h.cmdline());
    a.set_holder_class(h.holder_class());
    a.set_instance_id(h.instance_id());
    a.set_ppid(h.ppid());
    a.set_parent_cmdline(h.parent_cmdline());
    a.set_dry_run(options.dry_run);
    a.set_at_ms(absl::ToUnixMillis(clock_->Now()));
    bool target = false;
    switch (h.holder_class()) {
      case dcufleet::v1::HOLDER_MANAGED:
        a.set_action("skip");
        a.set_reason(absl::StrCat("managed by running instance '", h.instance_id(), "'"));
        break;
      case dcufleet::v1::HOLDER_ZOMBIE:
        a.set_action("report");
        a.set_reason(absl::StrCat("zombie: only its parent ", h.ppid(), " ('", h.parent_cmdline().substr(0, 80),
                                  "') can reap it; signals do nothing"));
        a.set_result("not signalled");
        break;
      case dcufleet::v1::HOLDER_EXITED:
        // KFD's record of a process that has left /proc (seed 000's 59 GiB):
        // there is nobody to signal, with or without --include-unmanaged.
        a.set_action("report");
        a.set_reason(absl::StrCat("no live process: KFD's record of pid ", pid,
                                  " outlived it; signals do nothing (reset the device)"));
        a.set_result("not signalled");
        break;
      case dcufleet::v1::HOLDER_LEFTOVER:
        a.set_reason(absl::StrCat("leftover of ended instance '", h.instance_id(), "'",
                                  h.parent_alive() ? "" : ", parent gone"));
        target = true;
        break;
      default:
        if (options.include_unmanaged) {
          a.set_reason("unmanaged holder (--include-unmanaged)");
          target = true;
        } else {
          a.set_action("skip");
          a.set_reason("unmanaged holder: not started by dcufleet (use --include-unmanaged)");
        }
    }
    if (target && (pid <= 1 || pid == self)) {
      target = false;
      a.set_action("skip");
      a.set_reason(absl::StrCat("refusing to signal pid ", pid, pid == self ? " (the agent itself)" : ""));
    }
    if (target) {
      a.set_action("sigterm");
      std::string detail;
      Life life = Check(options.proc_root, pid, h.start_time_ticks(), &detail);
      if (life == Life::kReused) {
        a.set_action("skip");
        a.set_result("pid reused by another process");
      } else if (life == Life::kEnded) {
        a.set_action("skip");
        a.set_result("gone before signal");
      } else if (options.dry_run) {
        a.set_result("dry run");
      } else if (kill(pid, SIGTERM) != 0) {
        a.set_result(absl::StrCat("error: kill(SIGTERM): ", strerror(errno)));
      } else {
        a.set_result("signalled");
        *report.add_actions() = a;
        targets.emplace_back(pid, report.mutable_actions(report.actions_size() - 1));
        continue;
      }
    }
    *report.add_actions() = a;
  }

  // Grace, then SIGKILL whoever is left.
  auto wait_all = [&](absl::Duration limit) {
    absl::Time deadline = absl::Now() + limit;
    while (true) {
      bool any = false;
      for (auto& [pid, act] : targets) {
        std::string detail;
        if (Check(options.proc_root, pid, holders[pid].start_time_ticks(), &detail) == Life::kRunning) any = true;
      }
      if (!any || absl::Now() >= deadline) return;
      absl::SleepFor(options.poll_interval);
    }
  };
  if (!targets.empty()) {
    wait_all(options.grace);
    std::vector<int> killed;
    for (auto& [pid, act] : targets) {
      std::string detail;
      Life life = Check(options.proc_root, pid, holders[pid].start_time_ticks(), &detail);
      if (life != Life::kRunning) {
        act->set_result(life == Life::kEnded ? "ended" : detail);
        continue;
      }
      ReapAction k = *act;
      k.set_action("sigkill");
      k.set_reason(absl::StrCat("still running after ", absl::FormatDuration(options.grace), " grace"));
      k.set_at_ms(absl::ToUnixMillis(clock_->Now()));
      act->set_result("still running after grace");
      if (kill(pid, SIGKILL) != 0) {
        k.set_result(absl::StrCat("error: kill(SIGKILL): ", strerror(errno)));
      } else {
        k.set_result("signalled");
        killed.push_back(pid);
      }
      *report.add_actions() = k;
    }
    if (!killed.empty()) {
      // Re-point targets at the SIGKILL actions for the final verdict.
      targets.clear();
      for (int i = 0; i < report.actions_size(); ++i) {
        auto* a = report.mutable_actions(i);
        if (a->action() == "sigkill" && a->result() == "signalled") targets.emplace_back(a->pid(), a);
      }
      wait_all(options.kill_wait);
      for (auto& [pid, act] : targets) {
        std::string detail;
        Life life = Check(options.proc_root, pid, holders[pid].start_time_ticks(), &detail);
        act->set_result(life == Life::kRunning ? "still running (uninterruptible?)" : "ended");
        if (life == Life::kRunning) {
          *report.add_findings() = MakeFinding(
              kError, "reap_failed", absl::StrCat("pid ", pid),
              absl::StrCat("pid ", pid, " survived SIGKILL (state D: stuck in the driver?); the device may need a reset"));
        }
      }
    }
  }

  if (reprobe) {
    auto after = reprobe();
    if (!after.ok()) {
      *report.add_findings() = MakeFinding(kWarning, kProbeFailed, "reprobe",
                                           absl::StrCat("re-probe after reap failed: ", after.status().message()));
    } else {
      for (const auto& b : before.devices()) {
        auto* m = report.add_memory();
        m->set_index(b.index());
        *m->mutable_device_free_before() = b.device_free();
        *m->mutable_host_used_before() = b.host_used();
        m->set_unreclaimed_before(b.unreclaimed_bytes());
        for (const auto& a : after->devices()) {
          bool same = !b.pci_bus().empty() ? a.pci_bus() == b.pci_bus() : a.index() == b.index();
          if (!same) continue;
          *m->mutable_device_free_after() = a.device_free();
          *m->mutable_host_used_after() = a.host_used();
          m->set_unreclaimed_after(a.unreclaimed_bytes());
          if (a.unreclaimed_bytes() > 0) {
            // A dry run reaped nothing: say what a reap could not free, not
            // that it "still has" it after a reap that did not happen.
            *report.add_findings() = MakeFinding(
                kWarning, kUnreclaimed, absl::StrCat("device ", a.index()),
                options.dry_run
                    ? absl::StrCat("device ", a.index(), " has ", common::HumanBytes(a.unreclaimed_bytes()),
                                   " unreclaimed that no live process holds: a reap cannot free it; "
                                   "reset the device")
                    : absl::StrCat("device ", a.index(), " still has ", common::HumanBytes(a.unreclaimed_bytes()),
                                   " unreclaimed after the reap: no live process holds it; reset the device"));
          }
        }
      }
    }
  }
  report.set_finished_at_ms(absl::ToUnixMillis(clock_->Now()));
  return report;
}

}  // namespace dcu::agent
