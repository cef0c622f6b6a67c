#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::modelkit {

// The one home of start-up phase parsing (issue 23): what phase an engine's
// start-up is in and the figures its log shows (shards k/n with rate and
// ETA, weights GiB and seconds, torch.compile seconds, graphs captured, KV
// cache GiB / GPU blocks / tokens, maximum concurrency), each with the line
// it came from. vLLM V0 and V1 (CUDA and ROCm/DTK) and SGLang. The agent runs
// it on every tail it reads; `dcuctl progress --log FILE` runs it offline.
//
// Pure: no I/O, no clock. Lines go through modelkit's log normaliser first,
// so multi-process prefixes, ANSI colour, timestamps and level prefixes do
// not matter; '\r' and '\n' both end a line (a tqdm redraw is a line).
// Linear in the input; a line is read up to its first kMaxLineBytes bytes.
//
// The phase is the one proven by the last line that proves one (vLLM
// captures CUDA graphs *after* sizing the KV cache, so COMPILING may follow
// KV_CACHE_SIZED), with two rules: READY is left only for FAILED, and a line
// that could belong to several phases (NCCL chatter, "init engine ... took")
// never moves the phase backwards. An excerpt that starts mid-way and shows
// no phase line keeps STARTUP_PHASE_UNSPECIFIED: never a guess.

inline constexpr size_t kMaxLineBytes = 8192;

struct StartupParseOptions {
  // false: the text is a tail cut at an arbitrary byte; its first line is
  // partial and is skipped.
  bool starts_at_line = true;
  // Record StartupProgress.evidence (offline); the agent leaves it off.
  bool keep_evidence = true;
  // The line number of the first line of `text` (1 for a whole file).
  int first_line_number = 1;
};

// Parses a whole log or an excerpt.
dcufleet::v1::StartupProgress ParseStartupLog(absl::string_view text,
                                              const StartupParseOptions& options = {});

// Applies the lines of `text` on top of `progress`, each once. Lines must
// not be applied twice: some rules read the state they find (a line that
// may belong to several phases never moves the phase backwards; a phase
// line after FAILED means the exception was not fatal), so a line re-read
// on top of a later state can land elsewhere (tests/fuzz/fuzz_startup_log
// found a failure re-read as "failed while starting" and an HTTP activity
// on a failed start-up). Reading tails of a growing log: StartupLogFollower.
void AdvanceStartupProgress(absl::string_view text, const StartupParseOptions& options,
                            dcufleet::v1::StartupProgress* progress);

// Follows a growing log through tails of it (the agent reads the last 64 KB
// on every poll; successive tails overlap): applies each complete line once,
// in order. The line still being written at the end (a progress bar's
// latest redraw) is read on every poll until it ends, then once more whole:
// the same last line again lands where it did. Where the previous tail's
// complete lines ended is found in the new one by their last bytes; a tail
// that does not hold them (the log grew by more than a tail, or was
// replaced) is read whole, its first line skipped unless `starts_at_line`.
//
// Where the log has positions (the runtime reads on from where the last
// read ended), AdvanceFrom applies what a read gives, no mark needed.
class StartupLogFollower {
 public:
  void Advance(absl::string_view tail, bool starts_at_line, dcufleet::v1::StartupProgress* progress);

  // `lines`: the complete lines written since the last read, none seen
  // before, starting at a line; `partial`: the line still being written
  // after them, read now and again until it ends (as Advance does).
  void AdvanceFrom(absl::string_view lines, absl::string_view partial,
                   dcufleet::v1::StartupProgress* progress);

  // The mark: the last kMarkBytes of the complete lines applied so far. Its
  // first place in a new tail is taken as the old end, so only a log that
  // repeats those 4 KB exactly, with the copy inside the new tail's overlap,
  // has lines applied twice (as every tail's were before the follower).
  static constexpr size_t kMarkBytes = 4096;

 private:
  std::string mark_;
};

// Applies one raw line (no '\n' or '\r' in it).
void ApplyStartupLine(absl::string_view raw_line, int line_number, bool keep_evidence,
                      dcufleet::v1::StartupProgress* progress);

// The agent counted `files` files in the instance's TRITON_CACHE_DIR. The
// first count is the baseline (a warm cache from earlier runs is not
// progress); files beyond it mean Triton is compiling kernels: COMPILING /
// TRITON_COMPILE unless the log already shows a later phase. Returns
// whether the count grew.
bool ApplyTritonCacheCount(int64_t files, dcufleet::v1::StartupProgress* progress);

// Whether `a` and `b` differ in anything a person or the controller follows
// (phase, activity, figures): not last_line, not the agent's timestamps,
// not evidence. The agent's progress test and the controller's change test.
bool StartupReportDiffers(const dcufleet::v1::StartupProgress& a,
                          const dcufleet::v1::StartupProgress& b);

// Whether the start-up advanced from `before` to `after`: a report
// difference, or a new line of the engine's own (last_line).
bool StartupAdvanced(const dcufleet::v1::StartupProgress& before,
                     const dcufleet::v1::StartupProgress& after);

// "loading_weights (shard 7/17)", "compiling (graph capture 33/67)",
// "starting (distributed init)": the phase as a person reads it.
std::string DescribeStartupPlace(const dcufleet::v1::StartupProgress& progress);

}  // namespace dcu::modelkit
