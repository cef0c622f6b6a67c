#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dcufleet/v1/catalog.pb.h"

namespace dcu::dcuctl {

// `dcuctl model audit PATH [-o json] [--catalog DIR] [--model NAME]
//  [--stack ID]... [--fix-plan] [--overlay-root DIR] [--apply-overlay]`
// Works offline: reads the model directory (or a config.json file) and the
// catalog files, never the controller.
//   PATH            model directory, or a config.json file
//   -o json         print the AuditReport as JSON (default: a table)
//   --catalog DIR   catalog files (deploy/catalog layout). Default: the first
//                   of $DCU_CATALOG_DIR, ./deploy/catalog,
//                   /etc/dcufleet/catalog, /usr/share/dcufleet/catalog that
//                   exists; none: audit without a catalog
//   --model NAME    compare with this catalog model instead of guessing
//   --stack ID      check head sizes against these stacks only (default: all)
//   --fix-plan      also print how to run the model without touching its
//                   files (overlay directory or --hf-overrides for the first
//                   --stack, when that stack accepts it)
//   --overlay-root  where overlays go (default /var/lib/dcufleet/overlays)
//   --apply-overlay create the overlay of the plan (never writes in PATH)
// Exit codes: 0 no error findings, 8 error findings, 2 bad usage or input
// (PATH missing, catalog unreadable, unknown --model/--stack).
struct ModelAuditArgs {
  std::string path;
  std::string output = "table";
  std::string catalog_dir;
  std::string model;
  std::vector<std::string> stacks;
  bool fix_plan = false;
  std::string overlay_root = "/var/lib/dcufleet/overlays";
  bool apply_overlay = false;
  // sha256 of every shard against a manifest (sha256sums in the directory,
  // or --manifest); reads every byte.
  bool verify_content = false;
  bool record_manifest = false;
  std::string manifest;
  // Draw a progress bar on `err` while hashing (main: stderr is a TTY).
  bool progress_bar = false;
};
int RunModelAudit(const ModelAuditArgs& args, std::ostream& out, std::ostream& err);

// `dcuctl model plan MODEL|PATH --device-total SIZE --device-free SIZE
//  [--tp N] [--max-model-len N] [--max-num-seqs N]
//  [--gpu-memory-utilization F] [--devices N] [--overhead SIZE]
//  [--kv-cache-memory-bytes SIZE] [--catalog DIR] [-o json]`
// Offline memory plan: MODEL is a catalog name or a model directory.
// SIZE accepts "64GiB", "65520MiB", "4.8GiB", bytes. Exit codes: 0 fits,
// 5 does not fit (as an unschedulable deploy), 2 bad usage or input.
struct ModelPlanArgs {
  std::string model;
  std::string output = "table";
  std::string catalog_dir;
  std::string device_total;
  std::string device_free;
  int tp = 0;
  int64_t max_model_len = 4096;
  int max_num_seqs = 1;
  double gpu_memory_utilization = 0.9;
  int devices = 8;
  std::string overhead;
  std::string kv_cache_memory_bytes;
};
int RunModelPlan(const ModelPlanArgs& args, std::ostream& out, std::ostream& err);

// The catalog directory `--catalog` resolves to ("" when none exists).
std::string ResolveCatalogDir(const std::string& flag_value);

// Table renderings (shared with `dcuctl deploy --dry-run` and `describe`).
void RenderAuditReport(const dcufleet::v1::AuditReport& report, std::ostream& out);
void RenderMemoryPlan(const dcufleet::v1::MemoryPlan& plan, std::ostream& out);
void RenderRemediationPlan(const dcufleet::v1::RemediationPlan& plan, std::ostream& out);

}  // namespace dcu::dcuctl
