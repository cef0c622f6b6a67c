#pragma once

#include <vector>

#include "dcufleet/v1/diagnosis.pb.h"
#include "modelkit/diagnosis/log_normalizer.h"
#include "modelkit/diagnosis/log_structure.h"

namespace dcu::modelkit {

// What a launch log says about where it ran, as typed facts (issue 15: the
// context lines that qualify an error -- engine version, platform, arch):
// the lines engines print at start-up, and the arch a device statement or
// the error itself names. A diagnosis shows them beside the error, so that
// "invalid device function" reads as "... on ROCm, gfx1151".
//
// The patterns go into the classifier's one RE2::Set (log_classifier.cc),
// so reading the context costs no pass of its own over the log; only the
// few lines that hit are read again for their captures.

enum class ContextKind {
  // Capture 1: the version of `engine`.
  kEngineVersion,
  // Capture 1: the platform, any case (lower-cased when read).
  kPlatform,
  // Capture 1: an arch, from a line that states what the device is
  // (llama.cpp's device list, rocBLAS's "for GPU arch :", gcnArchName,
  // PyTorch's "with CUDA capability sm_120").
  kDeviceArch,
  // Captures 1 and 2: a CUDA compute capability "8.6" -> "sm_86" (not on a
  // line naming an AMD device: old llama.cpp ROCm builds print "compute
  // capability 11.0" for gfx1100).
  kComputeCapability,
  // Capture 1: an arch anywhere; taken only from the terminal error's lines,
  // else an error line, and never from a line naming two archs (a list of
  // supported targets).
  kMentionedArch,
};

struct ContextPattern {
  ContextKind kind;
  // kEngineVersion, and a kPlatform that only one engine prints: its name.
  const char* engine;
  const char* pattern;
};

// In the order the classifier adds them to its set.
const std::vector<ContextPattern>& LogContextPatterns();

// `hits[k]`: the lines, ascending, where LogContextPatterns()[k] matched
// the normalised text. Engine, version and platform: the first line that
// says so; arch: a device statement first, else the terminal error's, else
// an error line's (first of each). Line numbers in the result are 1-based.
dcufleet::v1::LogContext ReadLogContext(const std::vector<NormalizedLine>& lines,
                                        const std::vector<std::vector<int>>& hits,
                                        const LogStructure& structure);

}  // namespace dcu::modelkit
