// dcuctl: the command line for dcufleet. Parses flags and dispatches to one
// file per command group; each returns the process exit code (exit_codes.h).
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/version.h"
#include "dcuctl/client.h"
#include "dcuctl/terminal_safe.h"
#include "dcuctl/catalog_commands.h"
#include "dcuctl/completion.h"
#include "dcuctl/config_commands.h"
#include "dcuctl/contexts.h"
#include "dcuctl/events_commands.h"
#include "dcuctl/output.h"
#include "dcuctl/stop_signal.h"
#include "dcuctl/wait_commands.h"
#include "dcuctl/watch_commands.h"
#include "dcuctl/client_security.h"
#include "dcuctl/apply_commands.h"
#include "dcuctl/deploy_commands.h"
#include "dcuctl/edit_commands.h"
#include "dcuctl/apikey_commands.h"
#include "dcuctl/scale_commands.h"
#include "dcuctl/deploy_options.h"
#include "dcuctl/diagnose_commands.h"
#include "dcuctl/progress_commands.h"
#include "dcuctl/copy_commands.h"
#include "dcuctl/model_commands.h"
#include "dcuctl/exit_codes.h"
#include "dcuctl/node_commands.h"
#include "dcuctl/object_ref.h"
#include "dcuctl/pool_commands.h"
#include "dcuctl/pki_commands.h"
#include "dcuctl/query.h"
#include "dcuctl/suggest.h"
#include "dcuctl/top_commands.h"

int main(int argc, char** argv) {
  using namespace dcu::dcuctl;
  // Everything dcuctl prints may carry what a node reported.
  TerminalSafeOutput safe_stdout(std::cout);
  TerminalSafeOutput safe_stderr(std::cerr);
  GlobalOptions g;
  // The connection as the command line gives it; the environment and the
  // context fill in the rest (contexts.h), and `version` says where from.
  std::string controller_flag, context_flag, dcuconfig_flag;
  const char* kOutputHelp = "output format: table|wide|json|yaml|name|jsonpath=TEMPLATE";
  // -o is checked after parsing, for a message of our own (CheckOutputFormat).

  CLI::App app{"dcuctl: run large language models on a fleet of accelerators"};
  app.require_subcommand(1);
  // Global options may follow any subcommand, as with kubectl
  // (`dcuctl apikey list -o json`, `dcuctl get nodes --controller X`):
  // what a subcommand does not know passes up to the app.
  app.fallthrough();
  app.add_option("--controller", controller_flag,
                 "controller HOST:PORT (else $DCUFLEET_CONTROLLER, else the context's, else "
                 "127.0.0.1:7070); several, comma-separated, for controllers sharing one "
                 "PostgreSQL database: the leader among them is used (docs/ha.md)");
  app.add_option("--context", context_flag,
                 "the context to use (else $DCUFLEET_CONTEXT, else current-context)");
  app.add_option("--dcuconfig", dcuconfig_flag,
                 "dcuctl's config file (else $DCUCONFIG, else $XDG_CONFIG_HOME/dcufleet/config, "
                 "else ~/.config/dcufleet/config)");
  app.add_option("-o,--output", g.output, kOutputHelp);
  app.add_option("--timeout", g.timeout_s, "seconds to wait for the controller")
      ->check(CLI::PositiveNumber);
  AddClientSecurityFlags(&app, &g);
  auto pki = PkiCommands::Add(&app);

  auto* version = app.add_subcommand("version", "print client and controller versions");

  auto* get = app.add_subcommand("get", "list objects")->require_subcommand(1);
  auto* get_nodes = get->add_subcommand("nodes", "list nodes")->alias("node")->alias("no");
  std::string get_name;
  bool get_watch = false;
  get_nodes->add_option("NAME", get_name, "only this node");
  get_nodes->add_flag("-w,--watch", get_watch, "after the table, print a line per change until Ctrl-C");
  auto* get_pools = get->add_subcommand("pools", "node pools (Slurm partitions) and their jobs")
                       ->alias("pool");
  std::string stacks_arch;
  auto* get_stacks = get->add_subcommand("stacks", "the tested-stack matrix")->alias("stack");
  get_stacks->add_option("--arch", stacks_arch, "only stacks for this arch, with their verdicts");
  auto* get_models = get->add_subcommand("models", "the model catalog and where each model is")
                         ->alias("model");
  auto* get_deployments =
      get->add_subcommand("deployments", "list deployments")->alias("deployment")->alias("deploy");
  get_deployments->add_option("NAME", get_name, "only this deployment");
  get_deployments->add_flag("-w,--watch", get_watch,
                            "after the table, print a line per change until Ctrl-C");
  std::string events_for;
  auto* get_events = get->add_subcommand("events", "recent events, newest last")->alias("event")
                         ->alias("ev");
  get_events->add_option("--for", events_for, "only this object's: deployment/NAME or node/NAME");
  get_events->add_flag("-w,--watch", get_watch, "after the table, print each new event until Ctrl-C");

  // top nodes [NAME]: device memory in use, by both views (kubectl top's words).
  auto* top = app.add_subcommand("top", "device memory in use, by both views: dcuctl top nodes")
                  ->require_subcommand(1);
  auto* top_nodes = top->add_subcommand("nodes", "per node, or per device of NAME: the device's "
                                                 "own view, the SMI's, and memory held by no live process");
  top_nodes->alias("node")->alias("no");
  std::string top_name, top_sort;
  top_nodes->add_option("NAME", top_name, "one node: a row per device");
  top_nodes->add_option("--sort-by", top_sort, "memory or unreclaimed (most first); else by name");
  top_nodes->add_flag("--no-headers", g.no_headers, "no header line");

  auto* describe = app.add_subcommand("describe", "show one object in detail")->require_subcommand(1);
  std::string node_name;
  auto* describe_node = describe->add_subcommand("node", "show a node's devices, memory views, "
                                                         "holders and findings");
  describe_node->alias("nodes")->alias("no");
  describe_node->add_option("NAME", node_name, "node name")->required();
  std::string deployment_name;
  auto* describe_deployment = describe->add_subcommand(
      "deployment", "plans, placement, attempts, findings and events of a deployment");
  describe_deployment->alias("deployments")->alias("deploy");
  describe_deployment->add_option("NAME", deployment_name, "deployment name")->required();

  std::string stack_id;
  auto* describe_stack = describe->add_subcommand("stack", "versions, recipes, verdicts and evidence");
  describe_stack->alias("stacks");
  describe_stack->add_option("ID", stack_id, "stack id")->required();

  auto* stack_cmd = app.add_subcommand("stack", "stack catalog operations")->require_subcommand(1);
  std::vector<std::string> import_files;
  bool import_dry = false;
  auto* stack_import = stack_cmd->add_subcommand(
      "import", "import stacks/models/evidence from textproto files (all or nothing)");
  stack_import->add_option("FILE", import_files, "catalog files (*.txtpb)")->required()
      ->check(CLI::ExistingFile);
  stack_import->add_flag("--dry-run", import_dry, "validate only");

  auto* model_cmd = app.add_subcommand("model", "model operations (audit and plan offline; copy)")
                        ->require_subcommand(1);
  dcu::dcuctl::ModelCopyArgs copy_args;
  auto* model_copy = model_cmd->add_subcommand(
      "copy", "copy a model directory to a node from the nearest verified copy on another node");
  model_copy->add_option("MODEL", copy_args.model, "catalog name (qwen3-32b) or directory name")->required();
  model_copy->add_option("--to", copy_args.to, "the node that gets the copy")->required();
  auto* copy_from = model_copy->add_option("--from", copy_args.from, "copy from this node (default: the controller picks)");
  model_copy
      ->add_option("--from-dir", copy_args.from_dir,
                   "copy from this shared file system's directory on the target (DIR/<model directory>; the "
                   "target's agent must list it in --shared-model-root)")
      ->excludes(copy_from);
  model_copy->add_flag("--wait", copy_args.wait, "follow the copy until it is verified and in place");
  model_copy->add_option("--timeout", copy_args.timeout_s, "seconds to wait (0 = forever)")
      ->check(CLI::NonNegativeNumber);
  ModelAuditArgs audit_args;
  auto* model_audit = model_cmd->add_subcommand(
      "audit", "audit a model directory offline: config.json against the catalog, safetensors index, shard headers and shapes");
  model_audit->add_option("PATH", audit_args.path, "model directory or config.json")->required();
  model_audit->add_option("--catalog", audit_args.catalog_dir, "catalog directory");
  model_audit->add_option("--model", audit_args.model, "catalog model to compare with");
  model_audit->add_option("--stack", audit_args.stacks, "check head sizes against these stacks");
  model_audit->add_flag("--fix-plan", audit_args.fix_plan, "show the remediation (overlay or --hf-overrides)");
  model_audit->add_option("--overlay-root", audit_args.overlay_root, "where overlays go");
  model_audit->add_flag("--verify-content", audit_args.verify_content,
                        "also check every shard's sha256 against a manifest (reads every byte)");
  model_audit->add_option("--manifest", audit_args.manifest,
                          "sha256 manifest (sha256sum lines or JSON); default: sha256sums in PATH");
  model_audit->add_flag("--record-manifest", audit_args.record_manifest,
                        "check content; with no manifest, write sha256sums when every header check passes");
  model_audit->add_flag("--apply-overlay", audit_args.apply_overlay,
                        "create the overlay directory (never touches the model's files)");
  ModelPlanArgs plan_args;
  auto* model_plan = model_cmd->add_subcommand("plan", "memory plan for a model on a device (offline)");
  model_plan->add_option("MODEL", plan_args.model, "catalog name or model directory")->required();
  model_plan->add_option("--catalog", plan_args.catalog_dir, "catalog directory");
  model_plan->add_option("--device-total", plan_args.device_total, "e.g. 64GiB")->required();
  model_plan->add_option("--device-free", plan_args.device_free, "device-view free, e.g. 4.8GiB");
  model_plan->add_option("--tp", plan_args.tp, "tensor parallel (0 = smallest that fits)");
  model_plan->add_option("--max-model-len", plan_args.max_model_len, "context length");
  model_plan->add_option("--max-num-seqs", plan_args.max_num_seqs, "concurrent sequences");
  model_plan->add_option("--gpu-memory-utilization", plan_args.gpu_memory_utilization, "fraction");
  model_plan->add_option("--devices", plan_args.devices, "devices on the node");
  model_plan->add_option("--overhead", plan_args.overhead, "per-device overhead");
  model_plan->add_option("--kv-cache-memory-bytes", plan_args.kv_cache_memory_bytes, "fixed KV size");

  auto* diagnose = app.add_subcommand("diagnose", "explain a failed launch")->require_subcommand(1);
  DiagnoseLogArgs diag_args;
  auto* diagnose_log = diagnose->add_subcommand("log", "classify a log file (offline)");
  diagnose_log->add_option("FILE", diag_args.log_path, "log file")->required();
  diagnose_log->add_option("--rules", diag_args.rules_path, "rules file");
  diagnose_log->add_option("--fallback-model", diag_args.fallback_model_path,
                           "learned fallback model file, or 'none'");
  diagnose_log->add_option("--tail", diag_args.tail_lines, "only the last N lines");
  diagnose_log->add_option("--fact", diag_args.facts,
                           "KEY=VALUE facts the log may not print, as the controller gives them "
                           "(arch=gfx928, stack.triton_version=3.1.0; repeatable)");
  std::string diagnose_name;
  auto* diagnose_deployment =
      diagnose->add_subcommand("deployment", "the findings of a deployment's failed attempts");
  diagnose_deployment->add_option("NAME", diagnose_name, "deployment name")->required();
  // `dcuctl diagnose --log FILE` (the spelling) also works.
  diagnose->add_option("--log", diag_args.log_path, "log file (offline)");
  diagnose->add_option("--rules", diag_args.rules_path, "rules file");
  diagnose->add_option("--fallback-model", diag_args.fallback_model_path,
                       "learned fallback model file, or 'none'");
  diagnose->require_subcommand(0, 1);

  ProgressLogArgs progress_args;
  auto* progress = app.add_subcommand(
      "progress", "the start-up phase and figures of an engine log (offline)");
  progress->add_option("--log", progress_args.log_path, "log file")->required();

  // deploy
  DeployArgs deploy_args;
  auto* deploy = app.add_subcommand("deploy", "run a model on the fleet: dcuctl deploy qwen3-32b");
  AddDeploymentSpecOptions(deploy, &deploy_args.spec);
  deploy->add_flag("--dry-run", deploy_args.dry_run, "print plans, placement and memory; launch nothing");
  deploy->add_flag("--wait", deploy_args.wait, "wait until ready, failed or unschedulable");
  deploy->add_flag("--watch", deploy_args.watch, "show progress until ready, failed or unschedulable");
  deploy->add_option("--wait-timeout", deploy_args.wait_timeout_s, "seconds to wait (0 = forever)")
      ->check(CLI::NonNegativeNumber);

  // apply -f
  ApplyArgs apply_args;
  auto* apply = app.add_subcommand(
      "apply", "deploy what a file declares (YAML or JSON, as get -o yaml|json prints it): dcuctl apply -f qwen.yaml");
  apply->add_option("-f,--filename", apply_args.file, "the file, or - for standard input")->required();
  apply->add_flag("--dry-run", apply_args.dry_run, "print plans, placement and memory; launch nothing");
  apply->add_flag("--wait", apply_args.wait, "wait until each is ready, failed or unschedulable");
  apply->add_flag("--watch", apply_args.watch, "show progress until each is ready, failed or unschedulable");
  apply->add_option("--wait-timeout", apply_args.wait_timeout_s, "seconds to wait (0 = forever)")
      ->check(CLI::NonNegativeNumber);

  // edit
  auto* edit = app.add_subcommand("edit", "edit an object in $EDITOR and apply it")->require_subcommand(1);
  std::string edit_name;
  auto* edit_deployment = edit->add_subcommand(
      "deployment", "the deployment as get -o json prints it, in $DCUCTL_EDITOR or $EDITOR; saved, it is applied");
  edit_deployment->alias("deployments")->alias("deploy");
  edit_deployment->add_option("NAME", edit_name, "deployment name")->required();

  // delete
  auto* del = app.add_subcommand("delete", "remove objects")->require_subcommand(1);
  std::vector<std::string> delete_names;
  bool delete_wait = false;
  auto* del_deployment = del->add_subcommand("deployment", "stop and remove a deployment");
  del_deployment->alias("deployments")->alias("deploy");
  del_deployment->add_option("NAME", delete_names, "deployment name (several: each is deleted)")->required();
  del_deployment->add_flag("--wait", delete_wait, "wait until its instances are stopped");

  // logs
  std::string logs_name, logs_instance;
  int logs_tail = 200;
  bool logs_follow = false;
  auto* logs = app.add_subcommand("logs", "print a deployment's instance log");
  logs->add_option("NAME", logs_name, "deployment name (or deployment/NAME)")->required();
  logs->add_option("--instance", logs_instance, "instance id (default: the latest attempt)");
  int logs_replica = -1;
  bool logs_previous = false;
  logs->add_option("--replica", logs_replica, "that replica's instance (its index, as get -o wide shows)")
      ->check(CLI::Range(0, 255));
  logs->add_flag("-p,--previous", logs_previous, "the attempt before the latest (kubectl's --previous)");
  logs->add_option("--tail", logs_tail, "lines from the end (with -f: shown first, then every new line)")
      ->check(CLI::Range(1, 100000));
  logs->add_flag("-f,--follow", logs_follow, "keep printing new lines");

  // scale, rollout status
  std::string scale_name;
  int scale_replicas = -1;  // -1: not given (the validator refuses negatives when given)
  bool scale_wait = false;
  double scale_timeout = 600;
  auto* scale = app.add_subcommand("scale", "change the number of replicas")->require_subcommand(1);
  // Before the object too, as kubectl's own example has it:
  // `scale --replicas=3 deployment/NAME`.
  scale->add_option("--replicas", scale_replicas, "replicas wanted")
      ->check(dcu::dcuctl::ScaleReplicasValidator());
  auto* scale_deployment = scale->add_subcommand("deployment", "dcuctl scale deployment NAME --replicas N");
  scale_deployment->alias("deployments")->alias("deploy");
  scale_deployment->add_option("NAME", scale_name, "deployment name")->required();
  scale_deployment->add_option("--replicas", scale_replicas, "replicas wanted (required)")
      ->check(dcu::dcuctl::ScaleReplicasValidator());
  scale_deployment->add_flag("--wait", scale_wait,
                             "wait until every replica is Ready (to zero: until every instance has stopped)");
  scale_deployment->add_option("--timeout", scale_timeout, "seconds to wait (0 = forever)")
      ->check(CLI::NonNegativeNumber);
  dcu::dcuctl::RolloutArgs rollout_args;
  std::string rollout_ref;
  auto* rollout = app.add_subcommand("rollout", "follow, restart or roll back a deployment's replicas")->require_subcommand(1);
  auto* rollout_status = rollout->add_subcommand(
      "status", "wait until every replica is Ready: dcuctl rollout status deployment/NAME");
  std::string rollout_name;
  bool rollout_wait = false;
  // The three take one deployment and a timeout; restart and undo follow
  // the rollout they start only with --wait (status always waits).
  auto rollout_options = [&](CLI::App* sub, bool waits) {
    sub->add_option("REF", rollout_ref, "deployment/NAME (or NAME, or deployment NAME)")->required();
    sub->add_option("NAME", rollout_name, "the name, when REF is the kind alone");
    if (!waits) sub->add_flag("--wait", rollout_wait, "then follow it as rollout status does");
    sub->add_option("--timeout", rollout_args.timeout_s, "seconds to wait (0 = forever)")
        ->check(CLI::NonNegativeNumber);
  };
  rollout_options(rollout_status, true);
  auto* rollout_restart = rollout->add_subcommand(
      "restart", "replace every replica, one at a time, on the spec it has: dcuctl rollout restart deployment/NAME");
  rollout_options(rollout_restart, false);
  auto* rollout_undo = rollout->add_subcommand(
      "undo", "roll back to the spec before the last rollout: dcuctl rollout undo deployment/NAME [--to-revision=N]");
  rollout_options(rollout_undo, false);
  int rollout_to_revision = 0;
  rollout_undo->add_option("--to-revision", rollout_to_revision,
                           "roll back to this revision of rollout history (0: the one before the current)")
      ->check(CLI::NonNegativeNumber);
  auto* rollout_history = rollout->add_subcommand(
      "history", "the revisions (creation, each rollout) and what changed: dcuctl rollout history deployment/NAME [--revision=N]");
  rollout_history->add_option("REF", rollout_ref, "deployment/NAME (or NAME, or deployment NAME)")->required();
  rollout_history->add_option("NAME", rollout_name, "the name, when REF is the kind alone");
  int rollout_revision = 0;
  rollout_history->add_option("--revision", rollout_revision, "show this revision's spec")
      ->check(CLI::NonNegativeNumber);

  // apikey create|list|revoke (the gateways' keys)
  std::string apikey_name;
  std::vector<std::string> apikey_models;
  auto* apikey = app.add_subcommand("apikey", "API keys for dcu-gateway (kept as hashes)")
                     ->require_subcommand(1);
  apikey->alias("apikeys");
  auto* apikey_create = apikey->add_subcommand(
      "create", "make a key and print it once: dcuctl apikey create NAME [--models m1,m2]");
  apikey_create->add_option("NAME", apikey_name, "key name (shown in logs; the key never is)")
      ->required();
  apikey_create->add_option("--models", apikey_models,
                            "deployment or served model names it may use (default: every model)")
      ->delimiter(',');
  auto* apikey_list = apikey->add_subcommand("list", "the keys: name, scope, age");
  auto* apikey_revoke = apikey->add_subcommand("revoke", "remove a key; gateways refuse it within a second");
  apikey_revoke->add_option("NAME", apikey_name, "key name")->required();

  // node reap
  auto* node_cmd = app.add_subcommand("node", "node operations")->require_subcommand(1);
  std::string reap_node;
  bool reap_dry = false, reap_unmanaged = false;
  auto* reap = node_cmd->add_subcommand(
      "reap", "end leftover processes holding a node's devices, then re-probe memory");
  reap->add_option("NODE", reap_node, "node name")->required();
  reap->add_flag("--dry-run", reap_dry, "only say what would be ended");
  reap->add_flag("--include-unmanaged", reap_unmanaged,
                 "also end processes dcufleet did not start (careful)");

  // cordon, drain, uncordon (kubectl's, for a node's maintenance)
  dcu::dcuctl::CordonArgs cordon_args;
  auto* cordon = app.add_subcommand("cordon", "take no new replicas on a node; what runs there stays");
  auto* drain = app.add_subcommand(
      "drain", "cordon a node and move its replicas elsewhere, each once its replacement is Ready");
  auto* uncordon = app.add_subcommand("uncordon", "let a cordoned or drained node take replicas again");
  for (CLI::App* sub : {cordon, drain, uncordon}) {
    sub->add_option("NODE", cordon_args.node, "node name (or node/NAME)")->required();
  }
  for (CLI::App* sub : {cordon, drain}) {
    sub->add_option("--reason", cordon_args.reason, "why, shown in get nodes -o wide and describe node");
  }
  drain->add_flag("--wait", cordon_args.wait, "wait until no replica is left on the node");
  drain->add_option("--timeout", cordon_args.timeout_s, "seconds to wait (0 = forever)")
      ->check(CLI::NonNegativeNumber);

  // wait
  WaitArgs wait_args;
  auto* wait = app.add_subcommand(
      "wait", "wait for a condition: dcuctl wait --for=condition=Ready deployment/NAME");
  std::string wait_name;
  wait->add_option("OBJECT", wait_args.object, "deployment/NAME or node/NAME (or KIND NAME)")->required();
  wait->add_option("NAME", wait_name, "the name, when OBJECT is the kind alone");
  wait->add_option("--for", wait_args.for_condition,
                   "condition=PHASE (Ready, Unschedulable, Failed, ...; a node: Ready, NotReady, "
                   "Lost) or delete")
      ->required();
  wait->add_option("--timeout", wait_args.timeout, "how long to wait: 30s, 5m, 1h (default 30s)");

  // completion
  std::string completion_shell;
  auto* completion = app.add_subcommand(
      "completion", "print a shell completion script: source <(dcuctl completion bash)");
  completion->add_option("SHELL", completion_shell, "bash or zsh")->required()
      ->check(CLI::IsMember({"bash", "zsh"}));

  // config
  auto* config = app.add_subcommand(
      "config", "contexts: which controller and credentials to use (the file: --dcuconfig)")
                     ->require_subcommand(1);
  auto* get_contexts = config->add_subcommand("get-contexts", "list the contexts; * is current");
  auto* current_context = config->add_subcommand("current-context", "print the current context");
  std::string context_name;
  auto* use_context = config->add_subcommand("use-context", "make a context the current one");
  use_context->add_option("NAME", context_name, "context name")->required();
  SetContextArgs set_args;
  auto* set_context = config->add_subcommand(
      "set-context", "create or change a context (file paths are stored absolute)");
  set_context->add_option("NAME", set_args.name, "context name")->required();
  set_context->add_option("--controller", set_args.controller, "controller HOST:PORT");
  set_context->add_option("--ca", set_args.ca, "PEM CA that signed the controller's certificate");
  set_context->add_option("--cert", set_args.cert, "PEM client certificate");
  set_context->add_option("--key", set_args.key, "PEM private key of --cert");
  set_context->add_option("--token-file", set_args.token_file, "file holding a bearer token");
  auto* delete_context = config->add_subcommand("delete-context", "remove a context");
  delete_context->add_option("NAME", context_name, "context name")->required();

  // -o is listed in these commands' own help too (it also works after any
  // other subcommand: fallthrough above).
  for (CLI::App* sub : {get_nodes, get_pools, describe_node, get_deployments, describe_deployment, deploy, reap,
                        get_stacks, get_models, get_events, describe_stack, stack_import,
                        model_audit, model_plan, diagnose_log, diagnose_deployment, diagnose,
                        progress, apikey_create, apikey_list}) {
    sub->add_option("-o,--output", g.output, kOutputHelp);
  }
  for (CLI::App* sub : {get_nodes, get_pools, get_deployments, get_stacks, get_models, get_events}) {
    sub->add_flag("--no-headers", g.no_headers, "table and wide: no header line");
  }

  // `get deployment/NAME` as kubectl takes it (object_ref.h).
  const std::vector<std::string> args = SplitKindSlashName(std::vector<std::string>(argv, argv + argc));
  try {
    std::vector<char*> split_argv;
    for (const std::string& a : args) split_argv.push_back(const_cast<char*>(a.c_str()));
    app.parse(static_cast<int>(split_argv.size()), split_argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped command gets its name and the closest ones, not CLI11's
    // "A subcommand is required".
    std::string unknown = UnknownCommandMessage(app, std::vector<std::string>(args.begin() + 1, args.end()));
    if (!unknown.empty()) {
      std::cerr << "error: " << unknown << "\n";
      return kExitUsage;
    }
    app.exit(e);
    return kExitUsage;
  }

  // kubectl's "-o=json": CLI11 keeps the '=' of a short option's value.
  if (!g.output.empty() && g.output[0] == '=') g.output.erase(0, 1);
  if (absl::Status s = CheckOutputFormat(g.output); !s.ok()) {
    std::cerr << "error: -o " << s.message() << "\n";
    return kExitUsage;
  }
  const bool is_get = get->parsed();
  if (*scale_deployment && scale_replicas < 0) {
    std::cerr << "error: scale needs --replicas N, for example: dcuctl scale deployment "
              << (scale_name.empty() ? "NAME" : scale_name) << " --replicas 2\n";
    return kExitUsage;
  }
  for (auto [ref, name] : {std::pair{&rollout_ref, &rollout_name}, std::pair{&wait_args.object, &wait_name}}) {
    auto joined = JoinKindAndName(*ref, *name);
    if (!joined.ok()) {
      std::cerr << "error: " << joined.status().message() << "\n";
      return kExitUsage;
    }
    *ref = *std::move(joined);
  }
  if (*logs) {
    // kubectl logs deployment/NAME; a node or another kind has no log here.
    std::string name = DeploymentNameFromRef(logs_name);
    if (name.empty()) {
      std::cerr << "error: logs takes a deployment: NAME or deployment/NAME, not '" << logs_name << "'\n";
      return kExitUsage;
    }
    logs_name = name;
  }
  if (g.output == "name" && !is_get) {
    std::cerr << "error: -o name is for 'dcuctl get'; use -o json or -o jsonpath=TEMPLATE here\n";
    return kExitUsage;
  }

  // Offline commands: no controller needed.
  if (*completion) {
    std::cout << (completion_shell == "zsh" ? ZshCompletion(app) : BashCompletion(app));
    return kExitOk;
  }
  if (*model_audit) {
    audit_args.output = g.output;
    audit_args.progress_bar = ::isatty(STDERR_FILENO) != 0;
    return RunModelAudit(audit_args, std::cout, std::cerr);
  }
  if (*model_plan) {
    plan_args.output = g.output;
    return RunModelPlan(plan_args, std::cout, std::cerr);
  }
  if (*diagnose_log || (*diagnose && !*diagnose_deployment)) {
    if (diag_args.log_path.empty()) {
      std::cerr << "error: diagnose needs --log FILE or 'deployment NAME'\n";
      return kExitUsage;
    }
    diag_args.output = g.output;
    return RunDiagnoseLog(diag_args, std::cout, std::cerr);
  }
  if (*progress) {
    progress_args.output = g.output;
    return RunProgressLog(progress_args, std::cout, std::cerr);
  }
  if (pki->selected()) return pki->Run(std::cout, std::cerr);

  // Which config file, then (online commands) which controller.
  auto env = [](const char* name) -> const char* { return std::getenv(name); };
  auto where = LocateConfig(dcuconfig_flag, env);
  if (!where.ok()) {
    std::cerr << "error: " << where.status().message() << "\n";
    return kExitUsage;
  }
  if (*get_contexts) return RunGetContexts(*where, std::cout, std::cerr);
  if (*current_context) return RunCurrentContext(*where, std::cout, std::cerr);
  if (*use_context) return RunUseContext(*where, context_name, std::cout, std::cerr);
  if (*set_context) return RunSetContext(*where, set_args, std::cout, std::cerr);
  if (*delete_context) return RunDeleteContext(*where, context_name, std::cout, std::cerr);
  auto file = LoadConfig(where->path);
  if (!file.ok()) {
    std::cerr << "error: " << file.status().message() << " (fix it, or pass --dcuconfig FILE)\n";
    return kExitUsage;
  }
  ConnectionFlags flags{controller_flag, g.tls_ca, g.tls_cert, g.tls_key, g.token_file, context_flag};
  auto conn = ResolveConnection(flags, env, &*file, where->path);
  if (!conn.ok()) {
    std::cerr << "error: " << conn.status().message() << "\n";
    return kExitUsage;
  }
  g.controller = conn->controller;
  g.tls_ca = conn->tls_ca;
  g.tls_cert = conn->tls_cert;
  g.tls_key = conn->tls_key;
  g.token_file = conn->token_file;

  // get --watch runs until Ctrl-C / SIGTERM, and then exits 0.
  if (get_watch) InstallStopSignals();
  Client client(g);
  if (!client.status().ok()) {
    std::cerr << "error: " << client.status().message() << "\n";
    return kExitUsage;
  }
  if (*version) {
    std::cout << "Client version: " << dcu::common::kVersion << "\n";
    std::cout << "Context: "
              << (conn->context.empty() ? std::string("none")
                                        : absl::StrCat(conn->context, " (from ", conn->context_source, ")"))
              << "\n";
    std::cout << "Controller: " << g.controller << " (from " << conn->controller_source << ", "
              << (g.tls_ca.empty() ? "plaintext" : "TLS") << ")\n";
    dcufleet::v1::GetVersionRequest req;
    dcufleet::v1::GetVersionResponse resp;
    grpc::Status s =
        CallFleet(client, &dcufleet::v1::FleetService::Stub::GetVersion, req, &resp);
    if (!s.ok()) return client.Fail(s, "asking the controller's version", std::cerr);
    std::cout << "Controller version: " << resp.version() << " (schema " << resp.schema_version()
              << ", database '" << resp.db_path() << "')\n";
    return kExitOk;
  }
  if (*get_nodes && get_watch) return RunWatchNodes(client, get_name, std::cout, std::cerr);
  if (*get_events && get_watch) return RunWatchEvents(client, events_for, std::cout, std::cerr);
  if (*get_deployments && get_watch) {
    return RunWatchDeployments(client, get_name, std::cout, std::cerr);
  }
  if (*get_nodes) return RunGetNodes(client, get_name, std::cout, std::cerr);
  if (*get_pools) return RunGetPools(client, std::cout, std::cerr);
  if (*get_deployments) return RunGetDeployments(client, get_name, std::cout, std::cerr);
  if (*get_events) return RunGetEvents(client, events_for, std::cout, std::cerr);
  if (*wait) return RunWait(client, wait_args, std::cout, std::cerr);
  if (*get_stacks) return RunGetStacks(client, stacks_arch, std::cout, std::cerr);
  if (*get_models) return RunGetModels(client, std::cout, std::cerr);
  if (*model_copy) return RunModelCopy(client, copy_args, std::cout, std::cerr);
  if (*describe_stack) return RunDescribeStack(client, stack_id, std::cout, std::cerr);
  if (*stack_import) return RunStackImport(client, import_files, import_dry, std::cout, std::cerr);
  if (*diagnose_deployment) return RunDiagnoseDeployment(client, diagnose_name, std::cout, std::cerr);
  if (*describe_deployment) {
    return RunDescribeDeployment(client, deployment_name, std::cout, std::cerr);
  }
  if (*deploy) {
    return RunDeploy(client, deploy_args, std::cout, std::cerr);
  }
  if (*apply) return RunApply(client, apply_args, std::cin, std::cout, std::cerr);
  if (*edit_deployment) return RunEdit(client, edit_name, std::cout, std::cerr);
  if (*apikey_create) return RunApiKeyCreate(client, apikey_name, apikey_models, std::cout, std::cerr);
  if (*apikey_list) return RunApiKeyList(client, std::cout, std::cerr);
  if (*apikey_revoke) return RunApiKeyRevoke(client, apikey_name, std::cout, std::cerr);
  if (*scale_deployment) {
    return RunScale(client, scale_name, scale_replicas, scale_wait, scale_timeout, std::cout, std::cerr);
  }
  if (*rollout_status || *rollout_restart || *rollout_undo || *rollout_history) {
    rollout_args.name = dcu::dcuctl::DeploymentNameFromRef(rollout_ref);
    if (rollout_args.name.empty()) {
      std::cerr << "error: rollout "
                << (*rollout_status ? "status" : *rollout_restart ? "restart" : *rollout_undo ? "undo" : "history")
                << " takes deployment/NAME, not '" << rollout_ref << "'\n";
      return kExitUsage;
    }
    if (*rollout_history) {
      return RunRolloutHistory(client, rollout_args.name, rollout_revision, std::cout, std::cerr);
    }
    if (*rollout_restart) return RunRolloutRestart(client, rollout_args, rollout_wait, std::cout, std::cerr);
    if (*rollout_undo) {
      return RunRolloutUndo(client, rollout_args, rollout_to_revision, rollout_wait, std::cout, std::cerr);
    }
    return RunRolloutStatus(client, rollout_args, std::cout, std::cerr);
  }
  if (*del_deployment) return RunDeleteDeployments(client, delete_names, delete_wait, std::cout, std::cerr);
  if (*logs) {
    dcu::dcuctl::LogsArgs logs_args{logs_name, logs_instance, logs_replica, logs_previous, logs_tail,
                                    logs_follow};
    logs_args.terminal = ::isatty(STDOUT_FILENO) != 0;
    if (struct winsize ws {}; logs_args.terminal && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      logs_args.columns = ws.ws_col;
    }
    return RunLogs(client, logs_args, std::cout, std::cerr);
  }
  if (*reap) return RunReapNode(client, reap_node, reap_dry, reap_unmanaged, std::cout, std::cerr);
  if (*cordon || *drain || *uncordon) {
    cordon_args.action = *cordon ? dcu::dcuctl::CordonArgs::Action::kCordon
                         : *drain ? dcu::dcuctl::CordonArgs::Action::kDrain
                                  : dcu::dcuctl::CordonArgs::Action::kUncordon;
    return RunCordon(client, cordon_args, std::cout, std::cerr);
  }
  if (*describe_node) return RunDescribeNode(client, node_name, std::cout, std::cerr);
  if (*top_nodes) return RunTopNodes(client, top_name, top_sort, std::cout, std::cerr);
  return kExitUsage;
}
