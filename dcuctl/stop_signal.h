#pragma once

// Ctrl-C and SIGTERM for the commands that run until stopped (get --watch):
// they end cleanly, exit 0, instead of dying mid-line.

#include <functional>

#include "absl/time/time.h"

namespace dcu::dcuctl {

// Blocks SIGINT and SIGTERM in this thread (and so in every thread started
// after it, gRPC's included) and starts a thread that waits for them. Call
// once, before the first gRPC channel is made. Other commands never call it,
// so that Ctrl-C ends them as usual.
void InstallStopSignals();
// True once SIGINT or SIGTERM arrived.
bool StopRequested();
// Sleeps `d`, waking early on a stop; returns StopRequested().
bool SleepUnlessStopped(absl::Duration d);
// Runs `fn` when a stop arrives (at once if it already has): e.g. cancel a
// streaming call blocked in Read. Replaces the previous callback; pass
// nullptr to clear it before `fn`'s captures go away.
void OnStop(std::function<void()> fn);

}  // namespace dcu::dcuctl
