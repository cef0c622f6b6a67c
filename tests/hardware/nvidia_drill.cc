// dcu-nvdrill: the agent's node-truth pieces as one small program, for the
// NVIDIA hardware drill (tests/hardware/nvidia_h200.sh). It links only the
// agent libraries that need no gRPC at run time, so it can be carried to a
// machine with a GPU and none of the project's build dependencies.
//
//   dcu-nvdrill inventory [inventory flags]
//       Exactly `dcu-agent inventory` (RunInventoryCommand), flags as
//       documented in agent/inventory/inventory.h (--device_probe, -o,
//       --memprobe, --nvml_library, --cuda_library, --memprobe_timeout,
//       --instance, --root, --proc_root, --no_processes).
//   dcu-nvdrill launch --state_dir DIR --id ID [--device N]... [--env K=V]... -- ARGV...
//       Starts ARGV through the agent's ProcessRuntime as a CUDA stack
//       (visible_devices_env CUDA_VISIBLE_DEVICES, the DCUFLEET_INSTANCE
//       marker, its own session, the dcu-instmon monitor). Prints the
//       RuntimeInstance as JSON.
//   dcu-nvdrill inspect --state_dir DIR --id ID
//       The runtime's view of the instance (running, pid, exit) as JSON.
//   dcu-nvdrill reap [--device_probe LIST] [--instance ID]... [--grace S] [library flags]
//       ReapNode: inventory, Reaper (SIGTERM, grace, SIGKILL to leftovers),
//       device view invalidated and measured again. Prints the ReapReport
//       as JSON. Exit 0 when every targeted holder ended, 1 otherwise.
#include <iostream>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "agent/inventory/inventory.h"
#include "agent/reap/reap_node.h"
#include "agent/probe/findings.h"
#include "agent/runtime/process_runtime.h"

namespace {

using dcu::agent::InventoryArgs;

// Minimal flag reader: --name value or --name=value.
class Flags {
 public:
  Flags(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) args_.emplace_back(argv[i]);
  }
  bool Next() { return pos_ < args_.size(); }
  const std::string& Peek() const { return args_[pos_]; }
  // True (and advances) when the current argument is `name`; the value is
  // the next argument or what follows '='.
  bool Take(const std::string& name, std::string* value) {
    const std::string& a = args_[pos_];
    if (a == name && pos_ + 1 < args_.size()) {
      *value = args_[pos_ + 1];
      pos_ += 2;
      return true;
    }
    if (a.rfind(name + "=", 0) == 0) {
      *value = a.substr(name.size() + 1);
      ++pos_;
      return true;
    }
    return false;
  }
  bool TakeSwitch(const std::string& name) {
    if (args_[pos_] != name) return false;
    ++pos_;
    return true;
  }
  std::vector<std::string> Rest() {
    std::vector<std::string> r(args_.begin() + static_cast<long>(pos_), args_.end());
    pos_ = args_.size();
    return r;
  }

 private:
  std::vector<std::string> args_;
  size_t pos_ = 0;
};

bool TakeInventoryFlag(Flags& f, InventoryArgs* a) {
  std::string v;
  if (f.Take("--root", &a->root) || f.Take("-o", &a->output) || f.Take("--output", &a->output) ||
      f.Take("--device_probe", &a->device_probe) || f.Take("--memprobe", &a->memprobe_path) ||
      f.Take("--hip_library", &a->hip_library) || f.Take("--nvml_library", &a->nvml_library) ||
      f.Take("--cuda_library", &a->cuda_library) || f.Take("--proc_root", &a->proc_root)) {
    return true;
  }
  if (f.Take("--memprobe_timeout", &v)) {
    if (!absl::SimpleAtod(v, &a->memprobe_timeout_s)) a->memprobe_timeout_s = -1;
    return true;
  }
  if (f.Take("--instance", &v)) {
    a->instances.push_back(v);
    return true;
  }
  if (f.TakeSwitch("--no_processes")) {
    a->no_processes = true;
    return true;
  }
  return false;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string json;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &json, o);
  return json;
}

nlohmann::json InstanceJson(const dcu::agent::RuntimeInstance& ri) {
  return {{"instance_id", ri.instance_id},
          {"running", ri.running},
          {"pid", ri.pid},
          {"exit_known", ri.exit_known},
          {"exit_code", ri.exit_code},
          {"term_signal", ri.term_signal},
          {"log_location", ri.log_location},
          {"notes", ri.notes}};
}

int Usage(const std::string& why) {
  std::cerr << "dcu-nvdrill: " << why
            << "\nusage: dcu-nvdrill inventory|launch|inspect|reap [flags] (see tests/hardware/nvidia_drill.cc)\n";
  return 2;
}

int Inventory(Flags& f) {
  InventoryArgs a;
  a.device_probe = dcu::agent::kNvidiaProbeList;
  while (f.Next()) {
    if (!TakeInventoryFlag(f, &a)) return Usage("unknown inventory flag '" + f.Peek() + "'");
  }
  return dcu::agent::RunInventoryCommand(a, std::cout, std::cerr);
}

absl::StatusOr<std::unique_ptr<dcu::agent::ProcessRuntime>> Runtime(const std::string& state_dir) {
  dcu::agent::ProcessRuntimeOptions o;
  o.state_dir = state_dir;
  return dcu::agent::ProcessRuntime::Create(o);
}

int Launch(Flags& f) {
  std::string state_dir, id, v;
  dcufleet::v1::InstanceSpec spec;
  spec.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
  spec.set_visible_devices_env("CUDA_VISIBLE_DEVICES");
  while (f.Next()) {
    if (f.Take("--state_dir", &state_dir) || f.Take("--id", &id)) continue;
    if (f.Take("--device", &v)) {
      int n = 0;
      if (!absl::SimpleAtoi(v, &n)) return Usage("--device wants a number");
      spec.add_device_indices(n);
      continue;
    }
    if (f.Take("--env", &v)) {
      std::pair<std::string, std::string> kv = absl::StrSplit(v, absl::MaxSplits('=', 1));
      (*spec.mutable_env())[kv.first] = kv.second;
      continue;
    }
    if (f.TakeSwitch("--")) {
      for (const auto& a : f.Rest()) spec.add_argv(a);
      break;
    }
    return Usage("unknown launch flag '" + f.Peek() + "'");
  }
  if (state_dir.empty() || id.empty() || spec.argv_size() == 0) return Usage("launch needs --state_dir, --id and -- ARGV");
  spec.set_instance_id(id);
  auto rt = Runtime(state_dir);
  if (!rt.ok()) return Usage(std::string(rt.status().message()));
  auto ri = (*rt)->Start(spec);
  if (!ri.ok()) {
    std::cerr << "dcu-nvdrill launch: " << ri.status() << "\n";
    return 1;
  }
  std::cout << InstanceJson(*ri).dump(2) << "\n";
  return 0;
}

int Inspect(Flags& f) {
  std::string state_dir, id;
  while (f.Next()) {
    if (f.Take("--state_dir", &state_dir) || f.Take("--id", &id)) continue;
    return Usage("unknown inspect flag '" + f.Peek() + "'");
  }
  auto rt = Runtime(state_dir);
  if (!rt.ok()) return Usage(std::string(rt.status().message()));
  auto ri = (*rt)->Inspect(id);
  if (!ri.ok()) {
    std::cerr << "dcu-nvdrill inspect: " << ri.status() << "\n";
    return 1;
  }
  std::cout << InstanceJson(*ri).dump(2) << "\n";
  return 0;
}

int Reap(Flags& f) {
  InventoryArgs a;
  a.device_probe = dcu::agent::kNvidiaProbeList;
  double grace_s = 10;
  std::string v;
  while (f.Next()) {
    if (f.Take("--grace", &v)) {
      if (!absl::SimpleAtod(v, &grace_s) || grace_s < 0) return Usage("--grace wants seconds");
      continue;
    }
    if (!TakeInventoryFlag(f, &a)) return Usage("unknown reap flag '" + f.Peek() + "'");
  }
  auto probes = dcu::agent::ParseProbeList(a.device_probe);
  if (!probes.ok()) return Usage(std::string(probes.status().message()));
  dcu::agent::InventoryOptions o;
  o.root = a.root;
  o.proc_root = a.proc_root;
  o.probes = *probes;
  o.memprobe_path = a.memprobe_path;
  o.nvml_library = a.nvml_library;
  o.cuda_library = a.cuda_library;
  o.memprobe_timeout = absl::Seconds(a.memprobe_timeout_s);
  for (const auto& id : a.instances) o.live_instance_ids.insert(id);
  auto collector = dcu::agent::InventoryCollector::Create(o);
  if (!collector.ok()) return Usage(std::string(collector.status().message()));
  dcu::agent::ReapOptions ro;
  ro.grace = absl::Seconds(grace_s);
  dcufleet::v1::ReapReport report = dcu::agent::ReapNode(collector->get(), ro);
  std::cout << ToJson(report) << "\n";
  bool ok = true;
  for (const auto& act : report.actions()) {
    if ((act.action() == "sigterm" || act.action() == "sigkill") && act.result() != "ended" &&
        act.result() != "still running after grace") {
      ok = false;
    }
  }
  for (const auto& finding : report.findings()) ok &= finding.severity() == dcu::agent::kInfo;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  std::string cmd = argv[1];
  Flags f(argc, argv, 2);
  if (cmd == "inventory") return Inventory(f);
  if (cmd == "launch") return Launch(f);
  if (cmd == "inspect") return Inspect(f);
  if (cmd == "reap") return Reap(f);
  return Usage("unknown command '" + cmd + "'");
}
