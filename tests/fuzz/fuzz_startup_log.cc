// An engine's start-up log as the agent reads it (modelkit/startup_progress,
// issue 23): the log grows, and every poll reads a tail of it that overlaps
// the one before (StartupLogFollower). Besides "nothing crashes": the
// follower's state after the last tail is what one read of the whole log
// gives (its unended last line included: the follower reads that line on
// every poll). Some rules read the state they find, so
// a line applied twice can land elsewhere; this target found exactly that
// when the agent re-read each tail whole (a failure re-read as "failed while
// starting", an HTTP activity on a failed start-up). A difference aborts with
// both states printed.
//
// Polls fall between the engine's writes (a line, or a bar's redraw),
// as a reader of a file sees them; the unended last line the follower reads
// on every poll is then a whole redraw.
//
// Input: the first 4 bytes choose the polls (how far the log has grown at
// each of 8 polls, and how far back each tail starts), the rest is the log.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "google/protobuf/text_format.h"
#include "modelkit/startup_progress.h"

namespace {

[[noreturn]] void Differ(const dcufleet::v1::StartupProgress& whole,
                         const dcufleet::v1::StartupProgress& followed) {
  std::string a, b;
  google::protobuf::TextFormat::PrintToString(whole, &a);
  google::protobuf::TextFormat::PrintToString(followed, &b);
  std::fprintf(stderr, "followed tails differ from one read\n--- whole ---\n%s--- followed ---\n%s",
               a.c_str(), b.c_str());
  std::abort();
}

// Where the complete lines of log[0, end) end (0: none).
size_t CompleteEnd(const std::string& log, size_t end) {
  const size_t last = log.find_last_of("\r\n", end == 0 ? 0 : end - 1);
  return end == 0 || last == std::string::npos ? 0 : last + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const std::string log(reinterpret_cast<const char*>(data) + 4, size - 4);
  constexpr size_t kMark = dcu::modelkit::StartupLogFollower::kMarkBytes;

  dcu::modelkit::StartupLogFollower follower;
  dcufleet::v1::StartupProgress followed;
  size_t applied_end = 0;  // where the complete lines read so far end
  size_t last_start = 0;   // where the last tail started
  bool checkable = true;
  for (int poll = 1; poll <= 8; ++poll) {
    // The log as it is at this poll; the last poll sees all of it.
    const uint8_t b = data[poll % 4] ^ static_cast<uint8_t>(poll * 37);
    size_t end = poll == 8 ? log.size() : std::max(applied_end, log.size() * poll / 8 * (128 + b % 128) / 256);
    // A process writes a line, or a bar's redraw ("\r" and its text), in
    // one write: a poll sees the log between writes, never inside one.
    while (end < log.size() && log[end] != '\r' && end > 0 && log[end - 1] != '\n' && log[end - 1] != '\r') ++end;
    // The tail starts anywhere before the mark, so that it holds the mark:
    // a tail that does not is read whole (the log grew by more than a tail),
    // and then lines are lost, as they are to the agent.
    // (The follower's mark: the last kMark bytes of the complete lines of
    // the last tail.)
    const size_t mark_start = std::max(last_start, applied_end > kMark ? applied_end - kMark : 0);
    const size_t start = mark_start * (b / 16) / 15;
    const std::string tail = log.substr(start, end - start);
    // A log whose mark occurs earlier in the tail than where it ended is
    // read from that earlier place (StartupLogFollower::kMarkBytes says so):
    // the result then is not checked.
    if (applied_end > 0) {
      const std::string mark = log.substr(mark_start, applied_end - mark_start);
      if (tail.find(mark) != mark_start - start) checkable = false;
    }
    follower.Advance(tail, /*starts_at_line=*/start == 0, &followed);
    applied_end = std::max(applied_end, CompleteEnd(log, end));
    last_start = start;
  }
  if (!checkable) return 0;
  const dcufleet::v1::StartupProgress whole = dcu::modelkit::ParseStartupLog(log, {.keep_evidence = false});
  if (dcu::modelkit::StartupAdvanced(whole, followed)) Differ(whole, followed);
  return 0;
}
