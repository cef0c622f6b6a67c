// dcu-agent: reports this node's accelerators to the controller and runs the
// instances assigned to it. `dcu-agent inventory` prints the node report
// offline (the first thing to run on a broken node). main() only parses flags
// and wires the pieces: InventoryCollector (probes + holder scan),
// NodeDiscovery (models, envs, images), InstanceManager (runtimes +
// supervision) and ControllerLink (the outbound stream).
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <optional>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "agent/discovery/node_discovery.h"
#include "agent/inventory/inventory.h"
#include "agent/drain/job_drain.h"
#include "agent/inventory/slurm_allocation.h"
#include "agent/reap/reap_node.h"
#include "agent/procscan/listen_ports.h"
#include "agent/link/controller_link.h"
#include "agent/link/link_security.h"
#include "agent/metrics/agent_metrics.h"
#include "agent/runtime/log_fetch.h"
#include "agent/runtime/runtime_registry.h"
#include "agent/supervisor/engine_load_scraper.h"
#include "agent/supervisor/instance_manager.h"
#include "agent/transfer/model_transfers.h"
#include "agent/transfer/transfer_service.h"
#include "common/clock.h"
#include "common/enum_names.h"
#include "common/file_lock.h"
#include "common/http_client.h"
#include "common/http_server.h"
#include "common/mutex_mode.h"
#include "common/net.h"
#include "common/path_confine.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/protobuf_log.h"
#include "common/process_runner.h"
#include "common/units.h"
#include "common/version.h"
#include "google/protobuf/util/json_util.h"

namespace {

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

bool OnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string p = absl::StrCat(dir, "/", tool);
    if (access(p.c_str(), X_OK) == 0) return true;
  }
  return false;
}

// --container-cli as used: "auto" is docker, else podman, else none; ""
// for none.
std::string ContainerCliOf(const std::string& flag) {
  if (flag == "auto") return OnPath("docker") ? "docker" : OnPath("podman") ? "podman" : "";
  return flag == "none" ? "" : flag;
}

std::string ProtoJson(const google::protobuf::Message& m) {
  std::string json;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &json, o);
  return json;
}

}  // namespace

int main(int argc, char** argv) {
  dcu::common::TurnOffDeadlockDetectionInReleaseBuilds();
  // libprotobuf's own lines (a hostile peer's garbage) through our logger, rate-limited.
  dcu::common::RouteProtobufLogs();
  dcu::common::SetLogComponent("dcu-agent");
  CLI::App app{"dcu-agent: reports a node's accelerators to dcu-controller and runs its instances"};
  app.set_version_flag("--version", dcu::common::kVersion);
  std::string controller = "127.0.0.1:7070";
  std::string node;
  std::string root = "/";
  std::string state_dir = "/var/lib/dcufleet/agent";
  std::vector<std::string> model_roots, env_roots;
  std::string container_cli = "auto";
  std::string runtimes_list = dcu::agent::kDefaultRuntimes;
  const dcu::agent::RuntimeRegistry registry = dcu::agent::RuntimeRegistry::WithBuiltins();
  std::string device_probe = dcu::agent::kDefaultProbeList;
  std::string memprobe, hip_library, proc_root, nvml_library, cuda_library;
  double status_interval_s = 5, max_backoff_s = 30, memprobe_timeout_s = 20;
  double engine_scrape_interval_s = 1;
  std::string metrics_listen, transfer_listen;
  app.add_option("--controller", controller,
                 "controller HOST:PORT to dial; several, comma-separated, for controllers "
                 "sharing one PostgreSQL database: the leader among them (docs/ha.md)");
  std::string advertise_address;
  app.add_option("--advertise-address", advertise_address,
                 "host (IP or DNS name) others reach this node's instances at; default: the "
                 "address the controller sees this agent connect from");
  app.add_option("--node", node, "node name (default: the host name)");
  app.add_option("--root", root, "filesystem root to read sys/, proc/, dev/ from (tests, fixtures)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--state-dir", state_dir, "where instance state, logs and config overlays live");
  app.add_option("--model-root", model_roots, "directory whose subdirectories are models (repeatable)");
  app.add_option("--env-root", env_roots, "conda env, or directory of envs (repeatable)");
  std::vector<std::string> shared_model_roots;
  app.add_option("--shared-model-root", shared_model_roots,
                 "a shared file system's directory of models that the controller may have this node copy "
                 "from into its --model-root (repeatable; dcu-controller --model-shared-dir names it)");
  app.add_option("--container-cli", container_cli, "docker|podman|none|auto")
      ->check(CLI::IsMember({"docker", "podman", "none", "auto"}));
  app.add_option("--runtimes", runtimes_list,
                 absl::StrCat("runtime kinds to enable, comma-separated (known: ",
                              absl::StrJoin(registry.Kinds(), ", "), ")"))
      ->capture_default_str();
  app.add_option("--device_probe,--device-probe", device_probe, "probe backends, in order");
  app.add_option("--memprobe", memprobe, "dcu-memprobe helper (default: next to dcu-agent)");
  app.add_option("--hip_library,--hip-library", hip_library, "libamdhip64 the memprobe loads");
  app.add_option("--proc_root,--proc-root", proc_root, "where processes are listed (default <root>/proc)");
  std::string proc_net;
  app.add_option("--proc-net", proc_net,
                 "a directory of socket tables (tcp, tcp6) to read the ports other services listen "
                 "on from, which the controller then gives no instance (default: ask the kernel "
                 "over netlink, else /proc/net; the network instances bind in, so not under --root)");
  app.add_option("--nvml_library,--nvml-library", nvml_library,
                 "libnvidia-ml.so.1 (NVIDIA nodes: --device_probe nvml,cuda)");
  app.add_option("--cuda_library,--cuda-library", cuda_library, "libcuda.so.1 the memprobe loads");
  app.add_option("--memprobe-timeout", memprobe_timeout_s, "seconds before a hung runtime is given up")
      ->check(CLI::PositiveNumber);
  app.add_option("--status-interval", status_interval_s,
                 "seconds between reports until the controller says otherwise")
      ->check(CLI::PositiveNumber);
  app.add_option("--engine-scrape-interval", engine_scrape_interval_s,
                 "seconds between reads of each Ready instance's /metrics (engine load for "
                 "dcu-gateway); 0: never")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--metrics-listen", metrics_listen,
                 "HOST:PORT to serve Prometheus /metrics on (docs/metrics.md); off when empty");
  app.add_option("--transfer-listen", transfer_listen,
                 "HOST:PORT to serve this node's model directories to peer agents on (model "
                 "copies, issue 19); node certificates only with TLS; off when empty");
  std::string transfer_max_rate = "0";
  app.add_option("--transfer-max-rate", transfer_max_rate,
                 "cap of each model read a peer makes from this node, bytes per second "
                 "(\"100MiB\"); 0: none");
  app.add_option("--max-backoff", max_backoff_s, "cap of the reconnect back-off, seconds")
      ->check(CLI::PositiveNumber);
  bool inventory_delta = true;
  app.add_option("--inventory-delta", inventory_delta,
                 "send the full inventory only when it changed or the controller asks, else its "
                 "digest and the memory figures (issue 22); false sends it in every report, as an "
                 "agent from before")
      ->capture_default_str();
  std::string slurm_mode = "auto";
  app.add_option("--slurm", slurm_mode,
                 "auto: inside a Slurm job (SLURM_JOB_ID set) report only the job's devices, label the "
                 "node with the job, drain before its time limit (--drain-before), and on SIGTERM say Goodbye and stop every instance (docs/slurm.md); "
                 "off: ignore Slurm")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  // Issue 20: inside a job, drain before it ends (agent/drain/job_drain.h).
  double drain_before_s = 600, drain_stop_margin_s = 30, term_grace_s = 0;
  app.add_option("--drain-before", drain_before_s,
                 "inside a Slurm job: seconds before its time limit to drain (the controller moves "
                 "this node's replicas elsewhere, each only once its replacement is Ready); at most "
                 "half the job's time left at start")
      ->check(CLI::Range(0.0, 7.0 * 24 * 3600))
      ->capture_default_str();
  app.add_option("--drain-stop-margin", drain_stop_margin_s,
                 "inside a Slurm job: seconds before its time limit to stop whatever still runs")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--term-grace", term_grace_s,
                 "inside a Slurm job: seconds after SIGTERM to keep draining before stopping "
                 "instances (0: at once; Slurm sends SIGKILL KillWait seconds after SIGTERM)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();

  dcu::agent::AgentSecurityOptions security_options;
  dcu::agent::AddAgentSecurityFlags(&app, &security_options);
  auto* inventory_cmd = app.add_subcommand("inventory", "print this node's report and exit");
  dcu::agent::InventoryArgs inv_args;
  inventory_cmd->add_option("-o,--output", inv_args.output, "table|json")
      ->check(CLI::IsMember({"table", "json"}));
  inventory_cmd->add_option("--root", inv_args.root, "filesystem root")->check(CLI::ExistingDirectory);
  inventory_cmd->add_option("--device_probe,--device-probe", inv_args.device_probe, "probe backends");
  inventory_cmd->add_option("--memprobe", inv_args.memprobe_path, "dcu-memprobe helper");
  inventory_cmd->add_option("--hip_library,--hip-library", inv_args.hip_library, "libamdhip64");
  inventory_cmd->add_option("--nvml_library,--nvml-library", inv_args.nvml_library,
                            "libnvidia-ml.so.1 (NVIDIA nodes: --device_probe nvml,cuda)");
  inventory_cmd->add_option("--cuda_library,--cuda-library", inv_args.cuda_library,
                            "libcuda.so.1 the memprobe loads");
  inventory_cmd->add_option("--memprobe_timeout,--memprobe-timeout", inv_args.memprobe_timeout_s,
                            "seconds");
  inventory_cmd->add_option("--instance", inv_args.instances, "ids of live instances (repeatable)");
  inventory_cmd->add_option("--proc_root,--proc-root", inv_args.proc_root, "process list root");
  inventory_cmd->add_flag("--no_processes,--no-processes", inv_args.no_processes,
                          "skip the holder scan");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit 0; every usage error exits 2.
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (*inventory_cmd) {
    // Beside a running agent, its instances are its own holders, not
    // leftovers: the bare ones running from --state-dir are live, and the
    // containers its container runtime started.
    dcu::common::SubprocessRunner ps_runner;
    for (auto running : {dcu::agent::RunningBareInstances(state_dir),
                         dcu::agent::RunningContainerInstances(state_dir, ContainerCliOf(container_cli),
                                                               &ps_runner)}) {
      if (running.ok()) {
        inv_args.instances.insert(inv_args.instances.end(), running->begin(), running->end());
      } else {
        std::cerr << "dcu-agent inventory: the instances of --state-dir '" << state_dir
                  << "' are unknown (" << running.status().message()
                  << "): a running instance's processes may show as leftovers\n";
      }
    }
    return dcu::agent::RunInventoryCommand(inv_args, std::cout, std::cerr);
  }

  auto runtime_kinds = registry.ParseKinds(runtimes_list);
  if (!runtime_kinds.ok()) {
    std::cerr << "dcu-agent: --runtimes: " << runtime_kinds.status().message() << "\n";
    return 2;
  }

  if (node.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    node = host;
  }
  std::string why = dcu::common::ValidateName("--node", node);
  if (!why.empty()) {
    std::cerr << "dcu-agent: " << why << "\n";
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    std::cerr << "dcu-agent: cannot create --state-dir '" << state_dir << "': " << ec.message()
              << "\n";
    return 1;
  }
  state_dir = std::filesystem::absolute(state_dir).string();
  // One agent per state directory: a second would adopt the first one's
  // instances and, at its first assignment, stop them. The kernel drops the
  // lock however this process ends.
  auto state_lock = dcu::common::ExclusiveFileLock::TryAcquire(state_dir + "/agent.lock");
  if (!state_lock.ok()) {
    if (absl::IsAborted(state_lock.status())) {
      std::cerr << "dcu-agent: --state-dir '" << state_dir << "' is in use: "
                << state_lock.status().message()
                << ". Two agents on one state directory would adopt and stop each other's "
                   "instances; give this one its own --state-dir, or stop the other first\n";
      return 2;
    }
    // A file system without flock (Lustre mounted -o noflock, some NFS
    // set-ups): the check is a safeguard, not a reason not to run.
    DCU_LOG_WARN("--state-dir '", state_dir, "': ", state_lock.status().message(),
                 "; running without the check that no other agent uses this directory");
  } else {
    (void)(*state_lock)->DescribeHolder(absl::StrCat("dcu-agent pid ", getpid(), ", node '", node,
                                               "', since ",
                                               absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                                                                absl::UTCTimeZone())));
  }
  // Roots are compared with the controller's absolute model paths: a
  // relative one made every assignment fail confinement. Resolved once here
  // (symlinks too, as the confinement check resolves the model path).
  // Named, not resolved: the controller's --model-shared-dir names the same
  // path, and the copy confines symlinks inside each model directory.
  for (auto& r : shared_model_roots) r = std::filesystem::absolute(r, ec).lexically_normal().string();
  for (auto* roots : {&model_roots, &env_roots}) {
    for (auto& r : *roots) {
      std::filesystem::path resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(r), ec);
      if (ec) {
        std::cerr << "dcu-agent: cannot resolve root '" << r << "': " << ec.message() << "\n";
        return 2;
      }
      if (!std::filesystem::is_directory(resolved, ec)) {
        DCU_LOG_WARN("root '", r, "' (", resolved.string(), ") is not a directory yet; nothing under it is reported until it is");
      }
      r = resolved.string();
    }
  }

  // Node truth.
  dcu::agent::InventoryOptions io;
  io.root = root;
  io.proc_root = proc_root;
  io.probes = absl::StrSplit(device_probe, ',', absl::SkipEmpty());
  io.memprobe_path = memprobe;
  io.hip_library = hip_library;
  io.nvml_library = nvml_library;
  io.cuda_library = cuda_library;
  io.memprobe_timeout = absl::Seconds(memprobe_timeout_s);
  // Inside a Slurm job: the job's devices only, and its id, partition and
  // end time in every report (issue 20; agent/inventory/slurm_allocation.h).
  if (slurm_mode == "auto") {
    std::map<std::string, std::string> job_env;
    for (char** e = environ; e && *e; ++e) {
      absl::string_view kv(*e);
      size_t eq = kv.find('=');
      if (eq == absl::string_view::npos) continue;
      absl::string_view k = kv.substr(0, eq);
      bool wanted = absl::StartsWith(k, "SLURM");
      for (const char* v : dcu::agent::kSlurmDeviceVariables) wanted |= k == v;
      if (wanted) job_env[std::string(k)] = std::string(kv.substr(eq + 1));
    }
    auto job = dcu::agent::ParseSlurmEnvironment(job_env);
    if (!job.ok()) {
      std::cerr << "dcu-agent: inside a Slurm job: " << job.status().message() << "\n";
      return 2;
    }
    if (job->has_value()) {
      dcu::common::SubprocessRunner slurm_runner;
      std::vector<std::string> notes;
      if (absl::Status s = dcu::agent::ResolveSlurmJob(slurm_runner, dcu::agent::SlurmQueryOptions(), &**job, &notes);
          !s.ok()) {
        std::cerr << "dcu-agent: " << s.message() << "\n";
        return 1;
      }
      for (const auto& n : notes) DCU_LOG_WARN(n);
      const auto& a = **job;
      DCU_LOG_INFO("inside slurm job '", a.job_id(), "' (partition '", a.partition(), "', node '",
                   a.scheduler_node(), "'): devices [", absl::StrJoin(a.device_indices(), ","), "] from ",
                   a.devices_from(), a.end_time_ms() > 0
                       ? absl::StrCat(", ends ", absl::FormatTime(absl::FromUnixMillis(a.end_time_ms())))
                       : std::string(", no end time known"));
      io.allocation = a;
    }
  }
  auto collector = dcu::agent::InventoryCollector::Create(io);
  if (!collector.ok()) {
    std::cerr << "dcu-agent: --device_probe: " << collector.status().message() << "\n";
    return 2;
  }
  dcu::common::SubprocessRunner runner;
  container_cli = ContainerCliOf(container_cli);
  dcu::agent::DiscoveryOptions dopts;
  dopts.model_roots = model_roots;
  dopts.env_roots = env_roots;
  dopts.container_cli = container_cli;
  dcu::agent::NodeDiscovery discovery(dopts, &runner);

  // Runtimes and supervision. A backend this host cannot run (UNAVAILABLE:
  // no container CLI) is left out with a warning; any other failure is fatal.
  dcu::agent::RuntimeConfig runtime_config;
  runtime_config.state_dir = state_dir;
  runtime_config.container_cli = container_cli;
  runtime_config.runner = &runner;
  std::map<std::string, std::unique_ptr<dcu::agent::Runtime>> owned_runtimes;
  std::map<std::string, dcu::agent::Runtime*> runtimes;
  std::vector<std::string> enabled_kinds;
  for (const std::string& kind : *runtime_kinds) {
    auto rt = registry.Create(kind, runtime_config);
    if (rt.ok()) {
      runtimes[kind] = rt->get();
      owned_runtimes[kind] = std::move(*rt);
      enabled_kinds.push_back(kind);
    } else if (rt.status().code() == absl::StatusCode::kUnavailable) {
      DCU_LOG_WARN(kind, " runtime unavailable: ", rt.status().message());
    } else {
      std::cerr << "dcu-agent: " << kind << " runtime: " << rt.status().message() << "\n";
      return 1;
    }
  }
  if (runtimes.empty()) {
    std::cerr << "dcu-agent: none of --runtimes '" << runtimes_list << "' can run on this host\n";
    return 1;
  }
  dcu::common::SocketHttpClient http;
  dcu::common::RealClock clock;
  std::unique_ptr<dcu::agent::ControllerLink> link;
  dcu::agent::InstanceManager manager(
      runtimes, &http, &clock, dcu::agent::InstanceManager::Options(),
      [&link](const dcufleet::v1::InstanceStatus& st) {
        if (!link) return;
        dcufleet::v1::InstanceEvent ev;
        *ev.mutable_status() = st;
        link->SendInstanceEvent(ev);
      });
  if (absl::Status s = manager.Recover(); !s.ok()) {
    DCU_LOG_WARN("recovering instances: ", s.message());
  }
  for (const auto& st : manager.Snapshot()) {
    DCU_LOG_INFO("re-adopted instance '", st.instance_id(), "' (pid ", st.pid(), ")");
  }
  // The engines' own load, carried by every status (issue 17).
  dcu::common::SocketHttpClient scrape_http;
  dcu::agent::EngineLoadScraper scraper([&manager] { return manager.Snapshot(); }, &scrape_http,
                                        &clock, absl::Seconds(engine_scrape_interval_s));
  scraper.Start();

  // Model copies to this node (issue 19): into the first --model-root, from
  // peers dialled with this node's own certificate.
  std::atomic<bool> rescan_models{false};
  const bool peer_tls = security_options.tls.enabled();
  dcu::agent::ModelTransfers transfers(
      model_roots.empty() ? "" : model_roots.front(),
      [&security_options, peer_tls](const std::string&) -> std::shared_ptr<grpc::ChannelCredentials> {
        if (!peer_tls) return grpc::InsecureChannelCredentials();
        auto c = dcu::common::MakeChannelCredentials(security_options.tls);
        return c.ok() ? *c : grpc::InsecureChannelCredentials();
      },
      peer_tls, [&rescan_models] { rescan_models = true; }, shared_model_roots);
  std::unique_ptr<dcu::agent::ModelTransferServiceImpl> transfer_service;
  std::unique_ptr<grpc::Server> transfer_server;
  int transfer_port = 0;
  if (!transfer_listen.empty()) {
    auto hp = dcu::common::ParseHostPort(transfer_listen);
    if (!hp.ok()) {
      std::cerr << "dcu-agent: --transfer-listen: " << hp.status().message() << "\n";
      return 2;
    }
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (peer_tls) {
      auto c = dcu::agent::MakeTransferServerCredentials(
          {security_options.tls.cert, security_options.tls.key, security_options.tls.ca});
      if (!c.ok()) {
        std::cerr << "dcu-agent: --transfer-listen: " << c.status().message() << "\n";
        return 2;
      }
      creds = *c;
    } else if (dcu::common::IsLoopbackHost(hp->host) || security_options.insecure) {
      creds = grpc::InsecureServerCredentials();
    } else {
      std::cerr << "dcu-agent: --transfer-listen on '" << hp->host
                << "' without TLS: give --tls-ca/--tls-cert/--tls-key, or --insecure\n";
      return 2;
    }
    auto max_rate = dcu::common::ParseBytes(transfer_max_rate);
    if (!max_rate.ok()) {
      std::cerr << "dcu-agent: --transfer-max-rate: " << max_rate.status().message() << "\n";
      return 2;
    }
    transfer_service = std::make_unique<dcu::agent::ModelTransferServiceImpl>(node, model_roots, peer_tls,
                                                                              /*chunk_bytes=*/1 << 20, *max_rate);
    grpc::ServerBuilder b;
    b.AddListeningPort(transfer_listen, creds, &transfer_port);
    b.RegisterService(transfer_service.get());
    b.SetMaxSendMessageSize(16 << 20);
    transfer_server = b.BuildAndStart();
    if (!transfer_server || transfer_port == 0) {
      std::cerr << "dcu-agent: --transfer-listen: cannot listen on " << transfer_listen << "\n";
      return 1;
    }
    DCU_LOG_INFO("model transfer service on port ", transfer_port, peer_tls ? " (TLS, node certificates)" : "");
  }
  auto make_inventory = [&](bool force_discovery) {
    const std::vector<dcufleet::v1::InstanceStatus> instances = manager.Snapshot();
    (*collector)->SetInstances(instances);
    dcufleet::v1::NodeInventory inv = (*collector)->Collect();
    discovery.Fill(&inv, force_discovery || rescan_models.exchange(false));
    inv.set_agent_state_dir(state_dir);
    inv.set_transfer_port(transfer_port);
    for (auto& t : transfers.Snapshot()) *inv.add_transfers() = std::move(t);
    dcu::agent::FillForeignListenPorts(proc_net, instances, &inv);
    return inv;
  };

  // /metrics is rendered from the report the controller gets (the one source).
  std::unique_ptr<dcu::agent::AgentMetrics> metrics;
  std::unique_ptr<dcu::common::HttpServer> metrics_server;
  if (!metrics_listen.empty()) {
    dcu::common::HttpServerOptions mo;
    mo.name = "dcu-agent metrics";
    if (absl::Status s = dcu::common::ParseListenFlag("--metrics-listen", metrics_listen, &mo);
        !s.ok()) {
      std::cerr << "dcu-agent: " << s.message() << "\n";
      return 2;
    }
    metrics = std::make_unique<dcu::agent::AgentMetrics>(node);
    metrics_server = std::make_unique<dcu::common::HttpServer>(mo);
    metrics_server->Handle("/metrics", [&metrics](const dcu::common::ServedRequest&) {
      return metrics->Scrape();
    });
    if (absl::Status s = metrics_server->Start(); !s.ok()) {
      std::cerr << "dcu-agent: --metrics-listen: " << s.message() << "\n";
      return 1;
    }
    DCU_LOG_INFO("metrics on http://", dcu::common::JoinHostPort(mo.host, metrics_server->port()),
                 "/metrics");
  }
  auto record_report = [&](const dcufleet::v1::NodeStatus& s, absl::Time started) {
    if (!metrics) return;
    std::vector<dcu::agent::ProbeSample> probes;
    for (const auto& t : (*collector)->last_probe_timings()) probes.push_back({t.backend, t.took, t.ok});
    metrics->OnReport(s, probes, absl::Now() - started);
  };

  // The drain as reported (set by the main loop below, read by the link's threads).
  absl::Mutex drain_mu;
  std::optional<dcufleet::v1::NodeDrain> reported_drain;
  auto current_drain = [&]() -> std::optional<dcufleet::v1::NodeDrain> {
    absl::MutexLock lock(&drain_mu);
    return reported_drain;
  };
  dcu::agent::LinkCallbacks cb;
  cb.make_hello = [&] {
    absl::Time started = absl::Now();
    dcufleet::v1::Hello h;
    h.set_node_name(node);
    h.set_advertise_address(advertise_address);
    h.set_agent_version(dcu::common::kVersion);
    h.add_capabilities("inventory");
    h.add_capabilities("reap");
    h.add_capabilities("logs");
    h.add_capabilities("model-copy");
    for (const auto& [kind, r] : runtimes) h.add_capabilities(absl::StrCat("runtime:", kind));
    *h.mutable_inventory() = make_inventory(/*force_discovery=*/true);
    for (const auto& st : manager.Snapshot()) *h.add_instances() = st;
    h.set_applied_generation(std::max<int64_t>(0, manager.generation()));
    if (auto d = current_drain()) *h.mutable_drain() = *d;
    if (metrics) {
      dcufleet::v1::NodeStatus as_status;
      *as_status.mutable_inventory() = h.inventory();
      *as_status.mutable_instances() = h.instances();
      record_report(as_status, started);
    }
    return h;
  };
  cb.make_status = [&] {
    absl::Time started = absl::Now();
    dcufleet::v1::NodeStatus s;
    *s.mutable_inventory() = make_inventory(false);
    std::vector<dcufleet::v1::InstanceStatus> instances = manager.Snapshot();
    scraper.Fill(&instances);
    for (auto& st : instances) *s.add_instances() = std::move(st);
    s.set_applied_generation(std::max<int64_t>(0, manager.generation()));
    s.set_sent_at_ms(absl::ToUnixMillis(absl::Now()));
    if (auto d = current_drain()) *s.mutable_drain() = *d;
    record_report(s, started);
    return s;
  };
  cb.on_assignment = [&](const dcufleet::v1::Assignment& a) {
    std::vector<dcufleet::v1::InstanceSpec> specs(a.instances().begin(), a.instances().end());
    // Recipe paths (DTK's env.sh, library directories) are paths on the
    // node: under --root when the node is a recorded tree, as sys/ and dev/.
    if (root != "/") {
      std::string r = std::filesystem::absolute(root).string();
      for (auto& spec : specs) {
        if (spec.runtime_kind() != dcufleet::v1::RUNTIME_BARE) continue;  // image paths stay image paths
        for (auto& s : *spec.mutable_source_scripts()) {
          if (!s.empty() && s[0] == '/') s = absl::StrCat(r, s);
        }
        for (auto& p : *spec.mutable_ld_library_path_prefix()) {
          if (!p.empty() && p[0] == '/') p = absl::StrCat(r, p);
        }
      }
    }
    // A model path must resolve (symlinks included) inside a --model-root:
    // an assignment cannot make the agent read or serve anything else.
    if (!model_roots.empty()) {
      std::vector<dcufleet::v1::InstanceSpec> allowed;
      for (auto& spec : specs) {
        auto confined = dcu::common::ConfinePath(spec.model_path(), model_roots, "model_path");
        if (confined.ok()) {
          allowed.push_back(std::move(spec));
          continue;
        }
        DCU_LOG_WARN("refusing instance '", spec.instance_id(), "': ", confined.status().message());
        dcufleet::v1::InstanceEvent ev;
        ev.mutable_status()->set_instance_id(spec.instance_id());
        ev.mutable_status()->set_phase(dcufleet::v1::INSTANCE_FAILED);
        ev.mutable_status()->set_message(std::string(confined.status().message()));
        ev.set_reason("refused");
        if (link) link->SendInstanceEvent(ev);
      }
      specs = std::move(allowed);
    }
    DCU_LOG_INFO("assignment generation ", a.generation(), ": ", specs.size(), " instance(s)");
    if (metrics) metrics->OnAssignment(specs);
    manager.Apply(a.generation(), std::move(specs));
  };
  cb.on_command = [&](const dcufleet::v1::Command& c) {
    dcufleet::v1::CommandResult r;
    r.set_command_id(c.command_id());
    if (c.has_reap()) {
      dcu::agent::ReapOptions ro;
      ro.dry_run = c.reap().dry_run();
      ro.include_unmanaged = c.reap().include_unmanaged();
      ro.grace = absl::Milliseconds(c.reap().grace_ms() > 0 ? c.reap().grace_ms() : 5000);
      (*collector)->SetInstances(manager.Snapshot());
      dcufleet::v1::ReapReport report = dcu::agent::ReapNode(collector->get(), ro);
      r.set_ok(true);
      r.set_message(absl::StrCat(ro.dry_run ? "dry run: " : "", report.actions_size(),
                                 " action(s) on node '", node, "'"));
      r.set_payload_json(ProtoJson(report));
    } else if (c.has_fetch_logs()) {
      auto payload = dcu::agent::AnswerFetchLogs(c.fetch_logs(), runtimes, node);
      r.set_ok(payload.ok());
      if (payload.ok()) {
        r.set_payload_json(*std::move(payload));
      } else {
        r.set_message(std::string(payload.status().message()));
      }
    } else if (c.has_fetch_model()) {
      absl::Status s = transfers.Start(c.fetch_model());
      r.set_ok(s.ok());
      const auto& f = c.fetch_model();
      r.set_message(s.ok() ? absl::StrCat("node '", node, "' is copying '", f.model_dir(), "' from ",
                                          !f.source_dir().empty()  ? f.source_dir()
                                          : !f.source_url().empty() ? absl::StrCat(f.source_url(), "/", f.source_repo())
                                                                    : absl::StrCat("node '", f.source_node(), "'"))
                           : std::string(s.message()));
    } else {
      r.set_ok(false);
      r.set_message("unknown command");
    }
    return r;
  };

  auto credentials = dcu::agent::MakeAgentCredentials(security_options, node, controller);
  if (!credentials.ok()) {
    std::cerr << "dcu-agent: " << credentials.status().message() << "\n";
    return 2;
  }
  dcu::agent::ControllerLink::Options lo;
  lo.credentials = *credentials;
  lo.controller_address = controller;
  lo.status_interval = absl::Seconds(status_interval_s);
  lo.max_backoff = absl::Seconds(max_backoff_s);
  lo.inventory_delta = inventory_delta;
  link = std::make_unique<dcu::agent::ControllerLink>(lo, cb);
  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  DCU_LOG_INFO("dcu-agent ", dcu::common::kVersion, " node '", node, "' root '", root,
               "' state '", state_dir, "' runtimes ", absl::StrJoin(enabled_kinds, "+"),
               " dialing ", controller);
  link->Start();
  if (!io.allocation) {
    while (!g_stop) absl::SleepFor(absl::Milliseconds(100));
  } else {
    // Inside a job (issue 20): drain before it ends, then leave. The job
    // ends by its time limit, scancel or preemption (Slurm sends SIGTERM,
    // then SIGKILL after KillWait). Instances run in their own sessions, so
    // under proctrack/pgid they would outlive the job on devices it no
    // longer holds: the agent says Goodbye first (the node is Lost at once
    // and whatever was not moved is rescheduled), then stops every instance.
    dcu::agent::JobDrainOptions drain_options;
    drain_options.drain_before = absl::Seconds(drain_before_s);
    drain_options.stop_margin = absl::Seconds(drain_stop_margin_s);
    drain_options.term_grace = absl::Seconds(term_grace_s);
    dcu::agent::JobDrain job_drain(*io.allocation, drain_options, absl::Now());
    for (;;) {
      auto verdict = job_drain.Check(absl::Now(), g_stop, manager.HoldsNothing());
      if (verdict == dcu::agent::JobDrain::Verdict::kServe) {
        absl::SleepFor(absl::Milliseconds(100));
        continue;
      }
      bool changed = false;
      {
        absl::MutexLock lock(&drain_mu);
        const auto& d = *job_drain.drain();
        changed = !reported_drain || reported_drain->deadline_ms() != d.deadline_ms();
        reported_drain = d;
      }
      if (changed) {
        DCU_LOG_INFO("draining: ", job_drain.drain()->reason(), "; instances still here stop at ",
                     absl::FormatTime(absl::FromUnixMillis(job_drain.drain()->deadline_ms())));
        link->ReportNow();
      }
      if (verdict == dcu::agent::JobDrain::Verdict::kLeave) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (!link->Leave(job_drain.leave_reason(), absl::Seconds(3))) {
      DCU_LOG_WARN("could not say goodbye to the controller; the node goes Lost after heartbeats time out");
    }
    if (absl::Status s = manager.StopAllAndWait(absl::Seconds(20)); !s.ok()) {
      DCU_LOG_WARN("stopping instances as the slurm job ends: ", s.message());
    }
    DCU_LOG_INFO("leaving: ", job_drain.leave_reason(), "; goodbye said, instances stopped");
  }
  // Instances keep running: a restarted agent re-adopts them.
  link->Stop();
  transfers.Shutdown();
  if (transfer_server) transfer_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  scraper.Stop();
  if (metrics_server) metrics_server->Stop();
  manager.Shutdown();
  return 0;
}
