// dcu-loadgen: simulated agents against a real dcu-controller on loopback.
// See loadgen.h for the flags and BENCHMARKS.md for how the figures were taken.
#include <CLI/CLI.hpp>
#include <iostream>

#include "bench/loadgen/loadgen.h"
#include "common/mutex_mode.h"

int main(int argc, char** argv) {
  dcu::common::TurnOffDeadlockDetectionInReleaseBuilds();
  dcu::bench::LoadgenArgs a;
  CLI::App app{"dcu-loadgen: simulated dcu-agents against a real dcu-controller (loopback only)"};
  app.add_option("--mode", a.mode, "ingest | place | failover")->capture_default_str();
  app.add_option("--agents", a.agents, "simulated agents (one stream each)")->capture_default_str();
  app.add_option("--agents-per-connection", a.agents_per_connection,
                 "streams sharing one TCP connection")->capture_default_str();
  app.add_option("--report-interval", a.report_interval_s, "seconds between NodeStatus per agent")
      ->capture_default_str();
  app.add_option("--connect-rate", a.connect_rate, "agents dialing per second")->capture_default_str();
  app.add_option("--duration", a.duration_s, "steady-state seconds measured (ingest)")->capture_default_str();
  app.add_option("--warmup", a.warmup_s, "seconds of load before measuring (ingest)")->capture_default_str();
  app.add_option("--instance-events", a.instance_events_per_s,
                 "fleet-wide InstanceEvents per second (ingest)")->capture_default_str();
  app.add_option("--probes", a.probes_per_s, "ingest-latency probes per second")->capture_default_str();
  app.add_option("--deployments", a.deployments, "deployments to submit (place, failover)")
      ->capture_default_str();
  app.add_option("--deploy-window", a.deploy_window, "Deploy RPCs in flight")->capture_default_str();
  app.add_option("--fail-rate", a.fail_rate, "failure reports per second (failover)")->capture_default_str();
  app.add_option("--controller", a.controller, "HOST:PORT of a running controller (default: start one)");
  app.add_option("--controller-http", a.controller_http,
                 "HOST:PORT: start the controller with --http-listen there (metrics on)");
  app.add_option("--controller-bin", a.controller_bin, "dcu-controller to start (default: next to this binary)");
  app.add_option("--catalog", a.catalog, "catalog dir for the started controller (default bench/loadgen/catalog)");
  app.add_option("--db", a.db,
                 "the started controller's store: a SQLite file or postgres:// URL (default: a temp SQLite file)");
  app.add_option("--diagnosis-rules", a.diagnosis_rules, "rules file for the started controller");
  app.add_option("--json", a.json_path, "also write the figures as JSON to this file");
  app.add_option("--keep-log", a.keep_log, "copy the started controller's log to this file");
  app.add_option("--failover-trace", a.failover_trace,
                 "failover: write '<deployment> <failure sent ms> <next assignment ms>' per deployment "
                 "(Unix ms; bench/loadgen/failover_breakdown.py splits the latency with the --keep-log)");
  app.add_option("--hostile", a.hostile,
                 "ingest: measure a second window with N hostile agents beside the fleet")
      ->capture_default_str();
  app.add_flag("--full-reports", a.full_reports,
               "every report carries the full inventory and no digest (an agent from before issue 22)");
  app.add_flag("--expanded-figures", a.expanded_figures,
               "reports without the inventory carry DeviceMemory readings (source strings and all) in place "
               "of the compact MovingFigures, as an agent of the first issue-22 version does");
  app.add_flag("--uniform-fleet", a.uniform_fleet,
               "every node a K100_AI with all 8 devices free (the shape of bench/slurm/side_by_side.sh)");
  app.add_option("--tp", a.tp, "every deployment asks for this TP (default: the mixed stream)")
      ->check(CLI::Range(0, 64));
  app.add_option("--deploy-batch", a.deploy_batch,
                 "deployments per DeployMany RPC (place, failover); 0: one Deploy RPC each")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  app.add_option("--waves", a.waves,
                 "place: at least this many fill-the-fleet waves, each deleted before the next")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--min-window", a.min_window_s,
                 "place: more waves until the waves' placement windows add up to this many seconds")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--settle", a.settle_s,
                 "place: seconds to wait after the last wave is READY, then report the controller's RSS "
                 "(0: not reported)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--timeout", a.timeout_s, "seconds allowed for each wait")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::cout << std::unitbuf;  // progress shows as it happens, also through a pipe
  return dcu::bench::RunLoadgen(a, std::cout, std::cerr);
}
