// Replays the real H200 capture (tests/fixtures/nvidia-h200, see SOURCE.md)
// without a GPU. For each phase of the drill (idle, 20 GiB held, held and
// SIGSTOPped, left over by a killed server, recovered after the reap):
//  - the raw dcu-memprobe --runtime cuda output captured there goes through
//    ParseMemprobeOutput (the device view);
//  - NVML's figures captured there (pynvml: v2 memory, the compute process
//    list, the minor) are handed out by the fake libnvidia-ml.so.1 and read
//    by the real NvmlDeviceProbe (the host view);
//  - the holders the drill's scan saw (pid, state, marker, device files) are
//    attributed and classified again, and the verdicts computed again;
// and the result must be what the agent said on the H200.
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/inventory/inventory_merger.h"
#include "agent/probe/findings.h"
#include "agent/probe/hip_device_probe.h"
#include "agent/probe/nvml_device_probe.h"
#include "agent/procscan/proc_scanner.h"
#include "common/units.h"
#include "dcufleet/v1/node_truth.pb.h"
#include "gtest/gtest.h"
#include "tests/node_truth/node_truth_test_util.h"

namespace dcu::agent {
namespace {

using common::kGiB;
using common::kMiB;
using dcufleet::v1::Device;
using dcufleet::v1::NodeInventory;

std::string Read(const std::string& name) {
  std::ifstream in(std::string(DCU_NVIDIA_FIXTURE) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

NodeInventory Captured(const std::string& phase) {
  NodeInventory inv;
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;  // the capture must be this proto exactly
  auto s = google::protobuf::util::JsonStringToMessage(Read("inventory_" + phase + ".json"), &inv, o);
  EXPECT_TRUE(s.ok()) << phase << ": " << s.ToString();
  return inv;
}

class NvidiaH200FixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { capture_ = new nlohmann::json(nlohmann::json::parse(Read("capture.json"))); }
  const nlohmann::json& Raw(const std::string& phase) { return (*capture_)["raw"][phase]; }

  // The inventory the agent would compute from this phase's raw figures
  // and the holders its scan saw.
  NodeInventory Rebuild(const std::string& phase, const NodeInventory& captured,
                        const absl::flat_hash_set<std::string>& live) {
    const auto& nv = Raw(phase)["pynvml"];
    const Device& cd = captured.devices(0);
    setenv("FAKE_NVML_DEVICES",
           absl::StrCat("00000000:00:06.0,", nv["v2"]["total"].get<int64_t>(), ",", nv["v2"]["reserved"].get<int64_t>(),
                        ",", nv["v2"]["used"].get<int64_t>(), ",", nv["minor"].get<int>(), ",90,", cd.unique_id(),
                        ",NVIDIA H200")
               .c_str(),
           1);
    std::vector<std::string> procs;
    for (const auto& p : nv["compute_processes"]) {
      procs.push_back(absl::StrCat("0:", p["pid"].get<int>(), ":", p["used"].get<int64_t>()));
    }
    setenv("FAKE_NVML_PROCS", absl::StrJoin(procs, ";").c_str(), 1);
    NvmlOptions no;
    no.library = FAKE_NVML_GOOD;
    auto nvml = NvmlDeviceProbe::Create(no);
    EXPECT_TRUE(nvml.ok()) << nvml.status();

    common::ProcessOutput out;
    for (const auto& line : Raw(phase)["memprobe"]) out.stdout_data += line.dump() + "\n";
    out.exit_code = 0;

    std::vector<BackendResult> results;
    results.push_back({"nvml", (*nvml)->Probe()});
    results.push_back({"cuda", ParseMemprobeOutput(out, absl::Seconds(20), 0, "cuda")});
    NodeInventory inv;
    MergeOptions mo;
    MergeDevices(results, mo, &inv);

    // The scan as it was: the holders' /proc facts, their device files.
    ProcScanResult scan;
    for (const auto& h : cd.holders()) {
      ScannedProcess sp;
      sp.holder = h;
      sp.holder.set_vram_bytes(-1);
      sp.holder.clear_vram_source();
      std::string reason;
      sp.holder.set_holder_class(ClassifyHolder(h.state(), h.instance_id(), live, &reason));
      for (const auto& path : h.device_paths()) {
        int minor = 0;
        if (absl::StartsWith(path, "/dev/nvidia") && absl::SimpleAtoi(path.substr(11), &minor)) {
          sp.nvidia_minors.push_back(minor);
        }
      }
      scan.processes.push_back(std::move(sp));
    }
    std::vector<Device> devices(inv.devices().begin(), inv.devices().end());
    AttachHolders(scan, &devices, nullptr);
    inv.clear_devices();
    for (auto& d : devices) *inv.add_devices() = std::move(d);
    ComputeMemoryVerdicts(mo, &inv);
    return inv;
  }

  static nlohmann::json* capture_;
};
nlohmann::json* NvidiaH200FixtureTest::capture_ = nullptr;

TEST_P(NvidiaH200FixtureTest, RawFiguresGiveWhatTheAgentSaid) {
  const std::string phase = GetParam();
  NodeInventory captured = Captured(phase);
  ASSERT_EQ(captured.devices_size(), 1);
  const Device& want = captured.devices(0);
  // Holders of the captured phase were classified with no live instance.
  NodeInventory got = Rebuild(phase, captured, {});
  ASSERT_EQ(got.devices_size(), 1) << got.DebugString();
  const Device& d = got.devices(0);

  EXPECT_EQ(d.vendor(), "nvidia");
  EXPECT_EQ(d.arch(), want.arch());
  EXPECT_EQ(d.pci_bus(), want.pci_bus());
  EXPECT_EQ(d.unique_id(), want.unique_id());
  // Host view: exactly NVML's figures.
  EXPECT_EQ(d.total().bytes(), want.total().bytes());
  EXPECT_EQ(d.host_used().bytes(), want.host_used().bytes());
  EXPECT_EQ(d.host_free().bytes(), want.host_free().bytes());
  EXPECT_EQ(d.host_reserved().bytes(), want.host_reserved().bytes());
  // Device view: the raw helper run and the inventory's own run were two
  // processes a second apart; on the H200 they agreed to the byte.
  EXPECT_EQ(d.device_total().bytes(), want.device_total().bytes());
  EXPECT_NEAR(d.device_free().bytes(), want.device_free().bytes(), 64 * kMiB);
  EXPECT_EQ(d.device_self_used().bytes(), want.device_self_used().bytes());
  // Verdicts.
  EXPECT_EQ(d.unreclaimed().valid(), want.unreclaimed().valid()) << d.unreclaimed().source();
  EXPECT_EQ(d.unreclaimed_bytes(), want.unreclaimed_bytes()) << d.unreclaimed().source();
  EXPECT_EQ(d.holders_vram().bytes(), want.holders_vram().bytes());
  EXPECT_NEAR(d.schedulable_free().bytes(), want.schedulable_free().bytes(), 64 * kMiB);
  ASSERT_EQ(d.holders_size(), want.holders_size());
  for (int i = 0; i < d.holders_size(); ++i) {
    EXPECT_EQ(d.holders(i).pid(), want.holders(i).pid());
    EXPECT_EQ(d.holders(i).vram_bytes(), want.holders(i).vram_bytes());
    EXPECT_EQ(d.holders(i).holder_class(), want.holders(i).holder_class());
  }
  std::vector<std::string> want_codes, got_codes;
  for (const auto& f : want.findings()) want_codes.push_back(f.code());
  for (const auto& f : d.findings()) got_codes.push_back(f.code());
  EXPECT_EQ(got_codes, want_codes);
}

INSTANTIATE_TEST_SUITE_P(Phases, NvidiaH200FixtureTest,
                         ::testing::Values("idle", "alloc", "stopped", "leftover", "recovered"));

TEST_F(NvidiaH200FixtureTest, TheTwoViewsOnTheH200) {
  NodeInventory idle = Captured("idle"), alloc = Captured("alloc");
  const Device& i = idle.devices(0);
  const Device& a = alloc.devices(0);
  // CUDA's total is NVML's total less the driver's reserved memory.
  EXPECT_EQ(i.device_total().bytes(), i.total().bytes() - i.host_reserved().bytes());
  // Idle: what the device view counts as used is the helper's own context
  // (518 MiB) plus 8.8 MiB the driver keeps: well inside the tolerance.
  const int64_t idle_used = i.device_total().bytes() - i.device_free().bytes() - i.device_self_used().bytes();
  EXPECT_GT(idle_used, 0);
  EXPECT_LT(idle_used, 16 * kMiB);
  // 20 GiB through PyTorch: both views moved by 20 GiB plus the process's
  // context, and NVML's per-process figure says the same.
  const int64_t host_delta = a.host_used().bytes() - i.host_used().bytes();
  const int64_t device_delta = i.device_free().bytes() - a.device_free().bytes();
  EXPECT_GE(host_delta, 20 * kGiB);
  EXPECT_LE(host_delta, 20 * kGiB + 1536 * kMiB);
  EXPECT_NEAR(device_delta, host_delta, 8 * kMiB);
  ASSERT_EQ(a.holders_size(), 1);
  EXPECT_NEAR(a.holders(0).vram_bytes(), host_delta, 16 * kMiB);
}

TEST_F(NvidiaH200FixtureTest, WithoutTheHolderTheMemoryIsUnreclaimed) {
  // The alloc phase's real figures, but neither the scan nor NVML's list
  // names the process (it is out of sight): 20.6 GiB that nobody explains.
  NodeInventory got = Rebuild("alloc", Captured("alloc"), {});
  std::vector<Device> devices(got.devices().begin(), got.devices().end());
  devices[0].clear_vendor_processes();
  AttachHolders(ProcScanResult{}, &devices, nullptr);
  *got.mutable_devices(0) = devices[0];
  ComputeMemoryVerdicts(MergeOptions{}, &got);
  const Device& r = got.devices(0);
  EXPECT_GT(r.unreclaimed_bytes(), 20 * kGiB);
  bool flagged = false;
  for (const auto& f : r.findings()) flagged |= f.code() == kUnreclaimed;
  EXPECT_TRUE(flagged) << r.DebugString();
}

TEST_F(NvidiaH200FixtureTest, LeftoverIsManagedWhileItsInstanceRuns) {
  NodeInventory captured = Captured("leftover");
  NodeInventory got = Rebuild("leftover", captured, {"inst-h200"});
  ASSERT_EQ(got.devices(0).holders_size(), 1);
  EXPECT_EQ(got.devices(0).holders(0).holder_class(), dcufleet::v1::HOLDER_MANAGED);
  // The drill's own inventory while the instance ran said the same.
  const auto& managed = (*capture_)["inventory_managed"]["devices"][0]["holders"][0];
  EXPECT_EQ(managed["holder_class"], "HOLDER_MANAGED");
  EXPECT_EQ(managed["instance_id"], "inst-h200");
}

TEST_F(NvidiaH200FixtureTest, TheReapGaveTheMemoryBack) {
  dcufleet::v1::ReapReport r;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(Read("reap_report.json"), &r).ok());
  ASSERT_EQ(r.actions_size(), 1);
  EXPECT_EQ(r.actions(0).holder_class(), dcufleet::v1::HOLDER_LEFTOVER);
  EXPECT_EQ(r.actions(0).action(), "sigterm");
  EXPECT_EQ(r.actions(0).result(), "ended");
  ASSERT_EQ(r.memory_size(), 1);
  const int64_t device_back = r.memory(0).device_free_after().bytes() - r.memory(0).device_free_before().bytes();
  const int64_t host_back = r.memory(0).host_used_before().bytes() - r.memory(0).host_used_after().bytes();
  EXPECT_GE(device_back, 20 * kGiB);
  EXPECT_GE(host_back, 20 * kGiB);
  // The driver had not let go at once: the reap measured again.
  ASSERT_EQ(r.findings_size(), 1);
  EXPECT_EQ(r.findings(0).code(), "driver_release_lag");
  // The first run, before ReapNode waited for the driver, measured the host
  // view too early: NVML still had the 20.6 GiB as used.
  dcufleet::v1::ReapReport first;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(Read("run1/reap_report.json"), &first).ok());
  EXPECT_EQ(first.memory(0).host_used_after().bytes(), first.memory(0).host_used_before().bytes());
  EXPECT_GE(first.memory(0).device_free_after().bytes() - first.memory(0).device_free_before().bytes(), 20 * kGiB);
}

TEST_F(NvidiaH200FixtureTest, EveryCheckOfTheDrillPassed) {
  ASSERT_TRUE((*capture_)["passed"].get<bool>());
  EXPECT_EQ((*capture_)["checks"].size(), 15u);
  // The driver released an ended process's memory about 0.1 s after it
  // became a zombie.
  const auto& lag = (*capture_)["release_lag"];
  EXPECT_LT(lag["ended_ms"].get<double>(), lag["unlisted_ms"].get<double>());
}

}  // namespace
}  // namespace dcu::agent
