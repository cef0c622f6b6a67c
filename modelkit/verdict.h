#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/catalog.pb.h"

namespace dcu::modelkit {

// What a failure class says about whom, for classes of the diagnosis
// classifier (issue 6). A class this table does not know counts against the (stack, arch, model).
//   stack-arch:   triton_unsupported_gpu_target, triton_kernel_compile_failure,
//                 hip_invalid_device_function, unsupported_gpu_arch_runtime,
//                 rocm_library_missing_arch, wrong_platform_build
//   remediable:   shared_lib_undefined_symbol, missing_custom_op, no_cache_blocks
//   model-config: config_or_tokenizer_error, model_path_not_found,
//                 tp_not_divisible_heads
//   node-state:   startup_free_memory_below_utilization, port_in_use,
//                 cuda_oom_model_load, max_model_len_exceeds_kv_capacity
//   node-state also: unknown and "" (a kill, a signal, a crash without a
//                 message), node_lost, signal_while_serving, and a start-up
//                 the agent ended for no progress (startup_stalled) or at the
//                 ceiling (startup_ceiling): a peer, a network, a slow disk
//   stack-arch-model: everything else (unsupported_head_size,
//                 unsupported_model_architecture, nccl_rccl_init_failure, ...)
// A broken verdict resting on one node's launches only says so (only_node).
dcufleet::v1::FailureScope DefaultScopeOfFailureClass(absl::string_view failure_class);

// The scope a row counts under: its explicit scope, else the class default;
// a model-level failure with config_ok = false is the config's fault.
dcufleet::v1::FailureScope ScopeOf(const dcufleet::v1::Evidence& evidence);

// The newest rows a verdict lists as the ones that decided it (its counts
// say how many there were): a stack launched every day for a year would
// otherwise carry every launch's id in every verdict.
inline constexpr int kVerdictEvidenceIds = 16;

// One (stack, arch)'s evidence folded in time order into its verdicts: the
// (stack, arch) verdict and one per model. Adding a row is O(1) (amortised),
// so a controller that records a row per launch keeps its verdicts current
// without reading the key's history again (issue 22: a verdict was
// recomputed over every row of its key each time one was added).
// ComputeStackArchVerdict and ComputeModelVerdict fold the same way: one
// definition of what the evidence says.
class VerdictTally {
 public:
  VerdictTally(std::string stack_id, std::string arch);

  // Rows come oldest first; rows of the same millisecond count in the order
  // given (the store's: the order they were recorded). A row older than the
  // newest one added is refused (false, nothing added): the caller folds the
  // key's rows again, sorted. Rows of another stack or arch are skipped.
  bool Add(const dcufleet::v1::Evidence& row);

  dcufleet::v1::Verdict StackArch() const;
  dcufleet::v1::Verdict Model(absl::string_view model) const;

 private:
  struct Runs {  // "3 launches" or "2 launches and 1 probe"
    int launches = 0;
    int probes = 0;
    int total() const { return launches + probes; }
  };
  struct ClassFailures {  // the decisive failures of one class
    Runs runs;
    std::string first_node;
    bool many_nodes = false;
    bool catalog_word = false;  // a seed, probe or human row among them
    std::deque<std::string> ids;  // the newest kVerdictEvidenceIds
  };
  struct Fold {  // what one verdict reads: the arch's rows or one model's
    Runs ready;
    std::vector<std::string> ready_described;  // "qwen3-32b TP=2", distinct, in order
    std::deque<std::string> ready_ids;
    std::map<std::string, ClassFailures> failures;  // decisive failures by class
    Runs ignored;
    std::map<std::string, int> ignored_by_class;
    int64_t last_ignored_at_ms = 0;
    // The latest decisive row.
    bool latest_ready = false;
    std::string latest_class;
    int64_t latest_at_ms = 0;

    void Add(const dcufleet::v1::Evidence& row, bool decisive);
    int failed() const;
    bool decided() const { return ready.total() > 0 || !failures.empty(); }
  };
  // What every verdict of a fold says (state, counts, last time) and, for a
  // decided fold, the reason after `subject` ("on gfx928", "for m on
  // gfx928") and the deciding rows; `arch_level` adds what the (stack, arch)
  // verdict says about superseded rows.
  void Render(const Fold& f, absl::string_view subject, bool arch_level,
              dcufleet::v1::Verdict* v) const;

  std::string stack_id_;
  std::string arch_;
  int64_t newest_at_ms_;
  Fold arch_fold_;
  std::map<std::string, Fold, std::less<>> model_folds_;
};

// The (stack, arch) rows of `evidence`, oldest first; rows of the same
// millisecond in the order given (the store lists them in the order
// recorded). What VerdictTally and LearnedFixTally are fed.
std::vector<const dcufleet::v1::Evidence*> RowsInTimeOrder(
    const std::vector<dcufleet::v1::Evidence>& evidence, absl::string_view stack_id,
    absl::string_view arch);

// The verdict for (stack, arch) from every row of `evidence` (rows of other
// stacks/arches are skipped). Ready launches (any model) and stack-arch
// failures decide; the latest decisive row wins; a stack-arch failure after the
// last ready launch makes it broken. The reason explains itself, e.g.
// "broken on gfx928: triton_unsupported_gpu_target, 3 launches, last 2026-07-12".
dcufleet::v1::Verdict ComputeStackArchVerdict(
    absl::string_view stack_id, absl::string_view arch,
    const std::vector<dcufleet::v1::Evidence>& evidence);

// The verdict for (stack, arch, model): rows for this model that count
// (ready, stack-arch or stack-arch-model failures) decide, latest wins. With
// none, a broken (stack, arch) makes it broken (inherited); otherwise untested.
dcufleet::v1::Verdict ComputeModelVerdict(absl::string_view stack_id, absl::string_view arch,
                                          absl::string_view model,
                                          const std::vector<dcufleet::v1::Evidence>& evidence);

// One (stack, arch) verdict per declared arch and per arch with evidence,
// sorted by arch; `only_arch` non-empty restricts to that arch.
std::vector<dcufleet::v1::Verdict> ComputeArchVerdicts(
    const dcufleet::v1::Stack& stack, const std::vector<dcufleet::v1::Evidence>& evidence,
    absl::string_view only_arch = "");

// One (stack, arch, model) verdict per (arch, model) pair with evidence.
std::vector<dcufleet::v1::Verdict> ComputeModelVerdicts(
    const dcufleet::v1::Stack& stack, const std::vector<dcufleet::v1::Evidence>& evidence,
    absl::string_view only_arch = "");

// Verdict names ("works", "broken", "untested"): common/enum_names.h.

// "2026-07-12" (UTC).
std::string FormatDay(int64_t unix_ms);

}  // namespace dcu::modelkit
