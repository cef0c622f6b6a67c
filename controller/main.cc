// dcu-controller: wires the store, the fleet state and the gRPC services.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/allocator.h"
#include "common/mutex_mode.h"
#include "common/protobuf_log.h"
#include "common/net.h"
#include "common/version.h"
#include "common/data_path.h"
#include "controller/adapters/catalog_knowledge.h"
#include "controller/adapters/classifier_diagnoser.h"
#include "controller/adapters/pools_config.h"
#include "controller/adapters/slurm_batch_scheduler.h"
#include "controller/core/node_pool.h"
#include "modelkit/catalog_loader.h"
#include "controller/core/deploy_controller.h"
#include "controller/core/fleet_state.h"
#include "controller/core/remediation_policy.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "common/http_server.h"
#include "controller/service/controller_metrics.h"
#include "controller/service/fleet_service.h"
#include "controller/service/http_api.h"
#include "controller/service/node_service.h"
#include "controller/service/pool_service.h"
#include "controller/service/server_security.h"
#include "controller/service/standby_service.h"
#include "controller/store/pg_leader_lease.h"
#include "controller/store/store_lock.h"
#include "controller/store/store_migration.h"
#include "controller/store/store_set.h"

namespace {
// Set from the signal handler; the main loop polls it (only an atomic store is
// async-signal-safe).
std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  dcu::controller::TurnOffTcpReadChunks();
  dcu::common::TurnOffDeadlockDetectionInReleaseBuilds();
  // libprotobuf's own lines (a hostile peer's garbage) through our logger, rate-limited.
  dcu::common::RouteProtobufLogs();
  dcu::common::SetLogComponent("dcu-controller");
  CLI::App app{"dcu-controller: the dcufleet control plane"};
  std::string listen = "127.0.0.1:7070";
  std::string db = "dcufleet.db";
  std::string port_file;
  std::string http_listen;
  bool insecure = false;
  double not_ready_after_s = 15, lost_after_s = 60, status_interval_s = 5;
  app.add_option("--listen", listen, "HOST:PORT to serve on (port 0 picks a free port)");
  app.add_option("--db", db,
                 "SQLite database file (created if missing), or postgres://USER@HOST:PORT/DB: "
                 "a PostgreSQL database that any number of controllers share, one leading "
                 "(docs/ha.md)");
  double lease_s = 6, lease_renew_s = 2;
  std::string advertise;
  app.add_option("--lease", lease_s,
                 "PostgreSQL only: seconds a leader's lease lasts without renewal; a standby "
                 "takes over after it")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lease-renew", lease_renew_s, "PostgreSQL only: seconds between renewals")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--advertise", advertise,
                 "PostgreSQL only: HOST:PORT by which agents and dcuctl reach this controller, "
                 "recorded with the lease for the standbys to name (default: --listen)");
  app.add_option("--port-file", port_file, "write the bound port to this file once listening");
  app.add_option("--http-listen", http_listen,
                 "HOST:PORT for HTTP: Prometheus /metrics, the dashboard /ui/ and the read-only "
                 "JSON API /api/v1/ (docs/metrics.md); off when empty");
  app.add_flag("--insecure", insecure,
               "allow a non-loopback listen address without TLS (not recommended). Without TLS, "
               "even on loopback, any local process can speak as any node and call every RPC: "
               "use TLS (docs/security.md) for anything beyond a single-host demo");
  app.add_option("--not-ready-after", not_ready_after_s, "seconds without a report before NotReady")
      ->check(CLI::PositiveNumber);
  app.add_option("--lost-after", lost_after_s, "seconds without a report before Lost")
      ->check(CLI::PositiveNumber);
  app.add_option("--status-interval", status_interval_s, "seconds between agent reports")
      ->check(CLI::PositiveNumber);
  double forget_job_nodes_after_s = 600;
  app.add_option("--forget-job-nodes-after", forget_job_nodes_after_s,
                 "seconds a node inside a batch job (a Slurm pool's, say) stays listed as Lost "
                 "before it is forgotten (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  double requalify_after_s = 6 * 3600;
  app.add_option("--requalify-after", requalify_after_s,
                 "seconds after its last failure before a stack broken by evidence is tried "
                 "again (after every other plan)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::string catalog_dir, rules_file;
  double reconcile_interval_s = 1;
  app.add_option("--catalog", catalog_dir,
                 "catalog directory (*.txtpb stacks, models, evidence) imported at start-up "
                 "(default: $DCUFLEET_CATALOG, /etc/dcufleet/catalog, the source tree's "
                 "deploy/catalog)");
  app.add_option("--diagnosis-rules", rules_file,
                 "diagnosis rules file (default: $DCU_DIAGNOSIS_RULES, "
                 "/etc/dcufleet/diagnosis/rules.txtpb, the source tree's)");
  std::string model_shared_dir;
  app.add_option("--model-shared-dir", model_shared_dir,
                 "absolute path of a shared file system's directory of models that every node mounts "
                 "(DIR/<last part of hf_repo>): a node that lacks a model no node can give it copies it "
                 "from there, before any mirror; each agent must list it in --shared-model-root")
      ->check([](const std::string& v) -> std::string {
        return !v.empty() && v[0] == '/' ? "" : "must be an absolute path";
      });
  std::string model_mirror;
  app.add_option("--model-mirror", model_mirror,
                 "http://HOST[:PORT][/PREFIX] of a mirror laid out like the Hugging Face hub "
                 "(PREFIX/REPO/resolve/main/FILE): a node that lacks a model no node can give it "
                 "fetches it from there (the catalog's hf_repo)")
      ->check([](const std::string& v) -> std::string {
        return v.rfind("http://", 0) == 0 ? "" : "must start with http:// (https mirrors are not supported yet)";
      });
  int instance_port_base = 8000;
  double serving_drain_s = 10;
  app.add_option("--serving-drain", serving_drain_s,
                 "seconds a replica leaving a draining node is out of the gateway's rotation "
                 "before it stops, so that its requests in flight finish (docs/slurm.md)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--instance-port-base", instance_port_base,
                 "first port given to instances on each node (the next free one is used)")
      ->check(CLI::Range(1024, 65000));
  app.add_option("--reconcile-interval", reconcile_interval_s,
                 "seconds between deploy reconcile passes when nothing changes")
      ->check(CLI::PositiveNumber);
  std::string pools_file;
  app.add_option("--pools", pools_file,
                 "node pools file (text PoolsConfig, docs/slurm.md): Slurm partitions where the "
                 "controller submits dcu-agent jobs when a replica fits no registered node");
  bool inventory_delta = true;
  app.add_option("--inventory-delta", inventory_delta,
                 "take agents' reports that carry only their inventory's digest and memory "
                 "figures, asking for the full inventory when the digest is not the held one "
                 "(issue 22); false: agents send it in every report, as to a controller from "
                 "before")
      ->capture_default_str();
  double release_free_memory_s = 1;
  app.add_option("--release-free-memory-interval", release_free_memory_s,
                 "seconds between looks at the allocator's free pages, handed back to the kernel "
                 "once 64 MiB or more stayed free over three looks (tcmalloc keeps what a placement "
                 "wave freed); 0: never")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  dcu::controller::ServerSecurityOptions security_options;
  dcu::controller::AddServerSecurityFlags(&app, &security_options);
  app.set_version_flag("--version", dcu::common::kVersion);
  std::string migrate_from, migrate_to;
  CLI::App* migrate = app.add_subcommand(
      "migrate-store",
      "copy a stopped controller's SQLite store into an empty PostgreSQL database, verified "
      "by row counts and checksums per table, in one transaction (docs/ha.md)");
  migrate->add_option("--from", migrate_from, "the SQLite store (the old --db FILE)")->required();
  migrate->add_option("--to", migrate_to, "postgres://user@host:port/db, empty")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit 0; every usage error exits 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*migrate) {
    if (!dcu::controller::IsPostgresUrl(migrate_to)) {
      std::cerr << "dcu-controller migrate-store: --to '" << migrate_to
                << "' is not a postgres:// URL\n";
      return 2;
    }
    auto report = dcu::controller::MigrateSqliteToPostgres(migrate_from, migrate_to);
    if (!report.ok()) {
      std::cerr << "dcu-controller migrate-store: " << report.status().message() << "\n";
      return report.status().code() == absl::StatusCode::kFailedPrecondition ? 3 : 1;
    }
    std::cout << "copied '" << migrate_from << "' into " << dcu::controller::RedactPostgresUrl(migrate_to)
              << " (schema " << report->schema_version << "), verified:\n";
    for (const auto& t : report->tables) {
      std::cout << "  " << t.table << ": " << t.rows << " rows, checksum " << t.checksum << "\n";
    }
    return 0;
  }

  auto hp = dcu::common::ParseHostPort(listen);
  if (!hp.ok()) {
    std::cerr << "dcu-controller: --listen: " << hp.status().message() << "\n";
    return 2;
  }
  security_options.listen = listen;
  security_options.insecure = insecure;
  auto security = dcu::controller::ConfigureServerSecurity(security_options);
  if (!security.ok()) {
    std::cerr << "dcu-controller: " << security.status().message() << "\n";
    return 2;
  }
  if (!dcu::common::IsLoopbackHost(hp->host) && !security_options.tls_enabled()) {
    if (!insecure) {
      std::cerr << "dcu-controller: refusing to listen on non-loopback address '" << listen
                << "' without TLS; pass --insecure to do it anyway (anyone who can reach it "
                   "can start processes on your nodes)\n";
      return 2;
    }
    DCU_LOG_WARN("listening on non-loopback address '", listen,
                 "' WITHOUT TLS or authentication (--insecure)");
  }

  dcu::common::HttpServerOptions http_options;
  http_options.name = "dcu-controller http";
  http_options.threads = 2;
  if (!http_listen.empty()) {
    if (absl::Status s = dcu::common::ParseListenFlag("--http-listen", http_listen, &http_options);
        !s.ok()) {
      std::cerr << "dcu-controller: " << s.message() << "\n";
      return 2;
    }
    // The HTTP listener is plaintext: bearer tokens and the fleet's facts
    // must not cross a network in the clear (put a TLS proxy in front).
    if (!dcu::common::IsLoopbackHost(http_options.host) && !insecure) {
      std::cerr << "dcu-controller: refusing --http-listen on non-loopback address '"
                << http_listen << "' (plaintext HTTP); pass --insecure to do it anyway\n";
      return 2;
    }
  }

  dcufleet::v1::PoolsConfig pools_config;
  if (!pools_file.empty()) {
    auto pc = dcu::controller::LoadPoolsConfigFile(pools_file);
    if (!pc.ok()) {
      std::cerr << "dcu-controller: --pools: " << pc.status().message() << "\n";
      return 2;
    }
    pools_config = std::move(*pc);
  }

  const bool postgres = dcu::controller::IsPostgresUrl(db);
  if (postgres && lease_renew_s * 2 > lease_s) {
    std::cerr << "dcu-controller: --lease-renew " << lease_renew_s << " must be at most half of --lease "
              << lease_s << " (a leader must get at least two renewals through per lease)\n";
    return 2;
  }
  // One controller per store, held for the process's life (before the file
  // is even checked, so a second controller never reads a store mid-write).
  auto holder = [&](const std::string& address) {
    return absl::StrCat("pid ", getpid(), ", listening on ", address, ", since ",
                        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()));
  };
  // The database's directory is created when missing (the README's
  // /var/lib/dcufleet/controller.db on a fresh machine used to fail with
  // SQLite's "unable to open database file").
  if (db != ":memory:" && !postgres) {
    std::filesystem::path parent = std::filesystem::path(db).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
      std::filesystem::create_directories(parent, ec);
      if (ec) {
        std::cerr << "dcu-controller: cannot create the directory of database '" << db << "' ('"
                  << parent.string() << "'): " << ec.message()
                  << "; create it (as a user who may), or pass --db with a writable path\n";
        return 1;
      }
      std::filesystem::permissions(parent, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::replace, ec);
    }
  }
  // SQLite: one controller per file (the lock). PostgreSQL: any number,
  // one leading (the lease, below).
  std::optional<dcu::controller::StoreLock> store_lock;
  if (!postgres) {
    auto lock = dcu::controller::StoreLock::Acquire(db, holder(listen));
    if (!lock.ok()) {
      std::cerr << "dcu-controller: " << lock.status().message() << "\n";
      return 1;
    }
    store_lock.emplace(std::move(*lock));
  }
  const std::string db_shown = postgres ? dcu::controller::RedactPostgresUrl(db) : db;
  dcu::controller::PgOptions store_conn;
  // DCU_PG_PIPELINE=0: one round trip per statement, as before pipelining
  // (bench/ha/stores.sh compares the two in one run).
  if (const char* p = std::getenv("DCU_PG_PIPELINE"); p != nullptr && std::string(p) == "0") {
    store_conn.pipeline = false;
  }
  auto opened = dcu::controller::OpenStores(db, store_conn);
  if (!opened.ok()) {
    std::cerr << "dcu-controller: " << opened.status().message() << "\n";
    return 1;
  }
  dcu::controller::StoreSet& stores = *opened;
  auto schema = stores.SchemaVersion();

  // PostgreSQL: stand by until this controller holds the lease; every store
  // write is fenced by it from here on (pg_leader_lease.h). Losing it ends
  // the process at once: a deposed leader's memory of the fleet is stale,
  // and a restart comes back as a standby.
  std::unique_ptr<dcu::controller::PgLeaderLease> lease;
  if (postgres) {
    dcu::controller::PgOptions lease_conn;
    lease_conn.lock_timeout = absl::Seconds(lease_renew_s / 2);
    auto conn = dcu::controller::PgDatabase::Open(db, lease_conn);
    if (!conn.ok()) {
      std::cerr << "dcu-controller: " << conn.status().message() << "\n";
      return 1;
    }
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    lease = std::make_unique<dcu::controller::PgLeaderLease>(
        std::move(*conn), absl::StrCat(host, ":", getpid(), ":", absl::ToUnixNanos(absl::Now())),
        advertise.empty() ? listen : advertise,
        dcu::controller::LeaseOptions{absl::Seconds(lease_s), absl::Seconds(lease_renew_s)});
    stores.postgres->SetWriteFence(lease->WriteFence());
    signal(SIGTERM, OnStopSignal);
    signal(SIGINT, OnStopSignal);
    // While standing by, the port answers every call with the leader's
    // address (standby_service.h), so clients with several addresses move
    // on at once. Not with --listen HOST:0: the leader's port would differ.
    dcu::controller::StandbyService standby_service([&lease] { return lease->LeaderAddress(); });
    std::unique_ptr<grpc::Server> standby_server;
    if (hp->port != 0) {
      grpc::ServerBuilder standby_builder;
      standby_builder.AddListeningPort(listen, security->credentials);
      standby_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
      standby_builder.RegisterCallbackGenericService(&standby_service);
      // The leader's transport policy here too: agents that dial a standby
      // ping every 5 s and are answered with the leader's address, so its
      // ping, read-buffer and message-size rules are the leader's.
      dcu::controller::ApplyServerLimits(&standby_builder);
      standby_server = standby_builder.BuildAndStart();
    }
    std::string last_leader = "-";
    while (!g_stop) {
      absl::StatusOr<bool> leads = lease->Tick();
      if (leads.ok() && *leads) break;
      std::string now = leads.ok() ? lease->LeaderAddress() : std::string(leads.status().message());
      if (now != last_leader) {
        DCU_LOG_INFO("standby on '", db_shown, "': ",
                     leads.ok() ? absl::StrCat("the leader is at '", now, "'")
                                : absl::StrCat("cannot reach the lease: ", now));
        last_leader = now;
      }
      absl::SleepFor(absl::Seconds(lease_renew_s));
    }
    if (standby_server) standby_server->Shutdown(std::chrono::system_clock::now());
    standby_server.reset();
    if (g_stop) return 0;
    DCU_LOG_INFO("leading on '", db_shown, "' with lease token ", lease->token());
    lease->Start([](bool leading) {
      if (leading) return;
      DCU_LOG_ERROR("lost the lease (another controller leads, or the database was unreachable "
                    "for a whole lease); exiting so that nothing acts on stale state");
      _exit(3);
    });
  }

  dcu::controller::CatalogStore& catalog_store = *stores.catalog;
  dcu::controller::DeploymentStore& deployment_store = *stores.deployments;
  dcu::controller::ApiKeyStore& api_key_store = *stores.api_keys;

  // The shipped catalog: imported at every start (idempotent). A bad file
  // stops the start with file:line and reason rather than running half-known.
  catalog_dir = dcu::common::FindDataPath(catalog_dir, "DCUFLEET_CATALOG", "catalog");
  if (catalog_dir.empty()) {
    DCU_LOG_WARN("no catalog directory found; starting with what the database knows "
                 "(import with 'dcuctl stack import FILE')");
  } else {
    auto parsed = dcu::modelkit::LoadCatalogDir(catalog_dir);
    if (!parsed.ok()) {
      std::cerr << "dcu-controller: catalog '" << catalog_dir << "': " << parsed.status().message()
                << "\n";
      return 1;
    }
    auto imported = catalog_store.ImportCatalog(*parsed, absl::ToUnixMillis(absl::Now()));
    if (!imported.ok()) {
      std::cerr << "dcu-controller: importing catalog '" << catalog_dir
                << "': " << imported.status().message() << "\n";
      return 1;
    }
    DCU_LOG_INFO("catalog '", catalog_dir, "': ", parsed->stack_size(), " stacks, ",
                 parsed->model_size(), " models, ", parsed->evidence_size(), " evidence rows (",
                 imported->stacks_added_size(), " stacks added, ", imported->evidence_added(),
                 " evidence added)");
  }
  rules_file = dcu::common::FindDataPath(rules_file, "DCU_DIAGNOSIS_RULES",
                                         "diagnosis/rules.txtpb");
  // Only rules whose actions the reconciler executes are loadable. With no
  // file given or found, the rules built into the binary.
  auto classifier = dcu::modelkit::LoadClassifier(
      rules_file, dcu::controller::RemediationPolicy::HandledActions());
  if (!classifier.ok()) {
    std::cerr << "dcu-controller: " << classifier.status().message()
              << " (fix the file, or start without --diagnosis-rules and $DCU_DIAGNOSIS_RULES to use the built-in rules)\n";
    return 1;
  }
  dcu::controller::ClassifierDiagnoser diagnoser(std::move(*classifier));
  dcu::controller::CatalogKnowledge knowledge(&catalog_store, &dcu::common::RealClock::Get());
  knowledge.SetRequalifyAfter(absl::Seconds(requalify_after_s));

  dcu::controller::FleetState::Options opts;
  opts.not_ready_after = absl::Seconds(not_ready_after_s);
  opts.lost_after = absl::Seconds(lost_after_s);
  opts.status_interval = absl::Seconds(status_interval_s);
  opts.accept_inventory_digest = inventory_delta;
  opts.forget_job_nodes_after = absl::Seconds(forget_job_nodes_after_s);
  dcu::controller::FleetState fleet(stores.nodes, stores.events, &dcu::common::RealClock::Get(),
                                    opts);
  if (absl::Status s = fleet.Load(); !s.ok()) {
    std::cerr << "dcu-controller: loading nodes from '" << db_shown << "': " << s.message() << "\n";
    return 1;
  }

  dcu::controller::DeployController::Options dopts;
  dopts.interval = absl::Seconds(reconcile_interval_s);
  dopts.instance_port_base = instance_port_base;
  dopts.serving_drain = absl::Seconds(serving_drain_s);
  while (!model_mirror.empty() && model_mirror.back() == '/') model_mirror.pop_back();
  dopts.model_mirror = model_mirror;
  while (model_shared_dir.size() > 1 && model_shared_dir.back() == '/') model_shared_dir.pop_back();
  dopts.model_shared_dir = model_shared_dir;
  dcu::controller::DeployController deployments(&fleet, &knowledge, &diagnoser, &deployment_store,
                                                stores.events, &dcu::common::RealClock::Get(),
                                                dopts);
  if (absl::Status s = deployments.Load(); !s.ok()) {
    std::cerr << "dcu-controller: loading deployments from '" << db_shown << "': " << s.message() << "\n";
    return 1;
  }
  fleet.SetListener(&deployments);
  // Metrics only with an HTTP listener: without one nothing is counted.
  std::unique_ptr<dcu::controller::ControllerMetrics> metrics;
  if (!http_listen.empty()) {
    metrics = std::make_unique<dcu::controller::ControllerMetrics>();
    deployments.SetMetrics(metrics.get());
    stores.SetTransactionObserver([m = metrics.get()](absl::Duration took, bool ok) {
      m->OnStoreTransaction(took, ok);
    });
  }
  // Node pools (issue 20): built before the reconciler starts (it reads
  // them without a lock); their threads start once the port is bound.
  dcu::common::SubprocessRunner slurm_runner;
  std::vector<std::unique_ptr<dcu::controller::SlurmBatchScheduler>> batch_schedulers;
  std::vector<std::unique_ptr<dcu::controller::NodePool>> pools;
  std::vector<dcu::controller::NodePool*> pool_ptrs;
  for (const auto& pc : pools_config.slurm()) {
    dcu::controller::SlurmCommands cmds;
    if (!pc.sbatch().empty()) cmds.sbatch = pc.sbatch();
    if (!pc.squeue().empty()) cmds.squeue = pc.squeue();
    if (!pc.scancel().empty()) cmds.scancel = pc.scancel();
    cmds.slurm_conf = pc.slurm_conf();
    batch_schedulers.push_back(
        std::make_unique<dcu::controller::SlurmBatchScheduler>(cmds, &slurm_runner));
    auto pool = dcu::controller::NodePool::Create(pc, batch_schedulers.back().get(),
                                                  &dcu::common::RealClock::Get());
    if (!pool.ok()) {
      std::cerr << "dcu-controller: --pools '" << pools_file << "': " << pool.status().message() << "\n";
      return 2;
    }
    (*pool)->SetOnChange([&deployments] { deployments.MarkDirty(); });
    (*pool)->SetOnJobEnded([&fleet](const std::string& job, const std::string& why) {
      fleet.OnAllocationEnded(job, why);
    });
    pool_ptrs.push_back(pool->get());
    pools.push_back(std::move(*pool));
  }
  deployments.SetPools(pool_ptrs);
  deployments.Start();

  dcu::controller::NodeServiceImpl node_service(&fleet);
  dcu::controller::FleetServiceDeps deps;
  deps.fleet = &fleet;
  deps.events = stores.events;
  deps.deployments = &deployments;
  deps.catalog = &catalog_store;
  deps.api_keys = &api_key_store;
  deps.on_catalog_changed = [&knowledge, &deployments] {
    knowledge.Invalidate();
    deployments.MarkDirty();
  };
  deps.db_path = db_shown;
  deps.schema_version = schema.ok() ? *schema : 0;
  deps.model_origins = {dopts.model_shared_dir, dopts.model_mirror, ""};
  dcu::controller::FleetServiceImpl fleet_service(deps);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(listen, security->credentials, &bound_port);
  // gRPC sets SO_REUSEPORT by default: a second controller on the same port
  // would bind too and the kernel would split the agents between them.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&node_service);
  builder.RegisterService(&fleet_service);
  dcu::controller::PoolServiceImpl pool_service(pool_ptrs);
  builder.RegisterService(&pool_service);
  dcu::controller::ApplyServerLimits(&builder);
  if (metrics) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(metrics->InterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(creators));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    std::cerr << "dcu-controller: cannot listen on '" << listen
              << "' (address in use — another dcu-controller? — or not available)\n";
    return 1;
  }
  if (store_lock) (void)store_lock->UpdateHolder(holder(absl::StrCat(hp->host, ":", bound_port)));
  DCU_LOG_INFO("dcu-controller ", dcu::common::kVersion, " listening on ", hp->host, ":",
               bound_port, ", database '", db_shown, "' (schema ", schema.ok() ? *schema : 0, "), ",
               security->summary, ", ", dcu::common::MallocName());
  // Agents of the pools' jobs dial this controller unless the pools name
  // another address.
  for (auto& p : pools) {
    p->SetDefaultControllerAddress(dcu::common::JoinHostPort(hp->host, bound_port));
    DCU_LOG_INFO("slurm pool '", p->name(), "': partition '", p->config().partition(), "', at most ",
                 p->config().max_jobs(), " jobs, agents dial ", p->ControllerAddress());
    p->Start();
  }
  std::unique_ptr<dcu::common::HttpServer> http;
  if (!http_listen.empty()) {
    http = std::make_unique<dcu::common::HttpServer>(http_options);
    dcu::controller::HttpApiDeps api;
    api.reads = deps;
    api.metrics = metrics.get();
    api.tokens = security->tokens;
    dcu::controller::InstallHttpApi(http.get(), std::move(api));
    if (absl::Status s = http->Start(); !s.ok()) {
      std::cerr << "dcu-controller: --http-listen: " << s.message() << "\n";
      return 1;
    }
    DCU_LOG_INFO("dashboard on http://", dcu::common::JoinHostPort(http_options.host, http->port()),
                 "/ui/, metrics on /metrics");
  }
  if (!port_file.empty()) {
    std::ofstream(port_file + ".tmp") << bound_port << "\n";
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }

  dcu::common::FreeMemoryReleaser::Options release_options;
  release_options.interval = absl::Seconds(release_free_memory_s);
  dcu::common::FreeMemoryReleaser release_free_memory(release_options);

  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  absl::Duration tick = std::min(absl::Seconds(1), opts.not_ready_after / 4);
  while (!g_stop) {
    absl::SleepFor(tick);
    fleet.Tick();
  }
  DCU_LOG_INFO("shutting down");
  if (http) http->Stop();
  for (auto& p : pools) p->Stop();
  deployments.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (lease) {
    // Hand over at once rather than after a lease of waiting.
    lease->Stop();
    (void)lease->Release();
  }
  return 0;
}
