#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace dcu::bench {

// dcu-loadgen: one process simulating many agents against a real controller
// on loopback. Flags (bench/loadgen/main.cc):
//   --mode ingest|place|failover   what to measure (default ingest)
//   --agents N                      simulated agents, one NodeService.Connect stream each
//   --agents-per-connection K       streams sharing one TCP connection (default 1)
//   --report-interval S             NodeStatus period per agent (default 1)
//   --connect-rate R                agents dialing per second (default 2000)
//   --duration S / --warmup S       steady-state window (ingest) and warm-up
//   --instance-events R             fleet-wide InstanceEvents per second (ingest)
//   --probes R                      ingest-latency probes per second
//   --deployments M                 deployments submitted (place, failover)
//   --deploy-window W               Deploy RPCs in flight at once
//   --fail-rate R                   failure reports per second (failover)
//   --controller HOST:PORT          use a running controller instead of starting one
//   --controller-bin PATH           controller to start (default: next to dcu-loadgen)
//   --catalog DIR                   catalog for the started controller (default bench/loadgen/catalog)
//   --json FILE                     also write the figures as JSON
//   --keep-log FILE                 keep the started controller's log
//   --hostile N                     ingest: a second window with N hostile agents
//                                   (forged-event floods, 65,536-device Hellos)
//   --full-reports                  every NodeStatus carries the full inventory and no
//                                   digest (an agent from before issue 22); default:
//                                   digest-only reports when the controller accepts them
//   --tp N                          every deployment asks for TP N (default: a mix,
//                                   half automatic, the rest 1, 2, 4 or 8)
//   --deploy-batch K                place/failover: deployments per DeployMany RPC
//                                   (default 64); 0: one Deploy RPC each
//   --waves N / --min-window S      place: fill the fleet with --deployments, delete them all
//                                   and wait for the fleet to be empty (not timed), again,
//                                   until N waves and S seconds of placement windows are done;
//                                   placements/s is all placements over the sum of the waves'
//                                   windows (a small fleet fills in milliseconds: one wave
//                                   alone is too short a window to time)
struct LoadgenArgs {
  std::string mode = "ingest";
  int agents = 1000;
  int agents_per_connection = 1;
  double report_interval_s = 1.0;
  double connect_rate = 2000;
  double duration_s = 20;
  double warmup_s = 3;
  double instance_events_per_s = 10;
  double probes_per_s = 100;
  int deployments = 1000;
  int deploy_window = 256;
  double fail_rate = 200;
  std::string controller;
  std::string controller_bin;
  // Passed as the started controller's --http-listen (metrics on); empty:
  // no HTTP listener, nothing counted (metrics off).
  std::string controller_http;
  std::string catalog;
  // The started controller's --db: empty is a SQLite file in its temp dir;
  // a postgres:// URL puts the same run on PostgreSQL (issue 21).
  std::string db;
  std::string diagnosis_rules;
  std::string json_path;
  // Copy of the started controller's log (--keep-log FILE).
  std::string keep_log;
  // Failover mode: one line per failed-over deployment, "<deployment>
  // <FAILED report queued, Unix ms> <next plan's Assignment at the agent,
  // Unix ms>", for bench/loadgen/failover_breakdown.py.
  std::string failover_trace;
  // Extra seconds allowed for each wait (connect, placements, final check).
  double timeout_s = 120;
  // Hostile agents in a second ingest window (0: none).
  int hostile = 0;
  bool full_reports = false;
  // Reports without the inventory use DeviceMemory (the first issue-22
  // form) even where the controller takes MovingFigures.
  bool expanded_figures = false;
  // -1: the mixed TP stream; else every deployment's spec.tp.
  int tp = -1;
  // Identical nodes, nothing held (FleetOptions::uniform).
  bool uniform_fleet = false;
  int deploy_batch = 64;
  double settle_s = 0;  // place: seconds idle after the last wave before the settled RSS
  int waves = 1;
  double min_window_s = 0;
};

// Runs the load, prints a report to `out` (progress and problems to `err`).
// Returns 0 when the run completed without errors (no stream or RPC
// failures, no dropped reports, no "database is locked"), 1 when it
// completed with errors, 2 on bad arguments or when the controller could
// not be started.
int RunLoadgen(const LoadgenArgs& args, std::ostream& out, std::ostream& err);

}  // namespace dcu::bench
