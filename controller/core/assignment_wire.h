#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dcufleet/v1/node.pb.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::controller {

// A node's Assignment built from each instance's wire bytes, encoded once.
//
// Why: the reconcile pass sends a node its whole set again whenever one of
// its instances changes. Copying every InstanceSpec into a fresh message,
// serialising that to compare it with what the node was last sent, and
// serialising it again in gRPC's write took about 6% of the controller's CPU
// in a 20,000-deployment wave (BENCHMARKS.md, stop 43). An InstanceSpec
// never changes once its attempt exists — it is written only when the
// attempt is created (DeployController::TryLaunch, admission's first launch,
// and an orphan's readoption, which copies it unchanged) — so an instance id
// stands for its bytes: they are encoded once per node that runs it, a set
// is compared by its ids, and a new Assignment is those bytes laid end to
// end.

// One `instances` entry of an Assignment on the wire: tag, length, bytes.
std::string EncodeAssignmentInstance(const dcufleet::v1::InstanceSpec& spec);

// The ControllerMessage whose `assignment` is {generation, the instances
// encoded in `entries`}. The Assignment travels as the message's unknown
// field 2 (the oneof's `assignment`): on the wire it is byte for byte what a
// message built field by field would carry, and an agent parses it as such
// (tests/unit/controller_core/assignment_wire_test.cc); in memory
// `has_assignment()` is false, so code that reads an assignment back reads
// it from the wire.
dcufleet::v1::ControllerMessage EncodedAssignmentMessage(
    int64_t generation, const std::vector<std::pair<std::string, std::string>>& entries);

// What a node was last sent, per instance: (instance id, encoded entry), in
// the order of the Assignment.
struct EncodedAssignment {
  std::vector<std::pair<std::string, std::string>> instances;
  // False when the node was not connected to take it (sent again, with a
  // new generation, when it reconnects).
  bool delivered = false;

  // True when `specs` are this set's instances, in its order: compared by
  // id before anything is encoded (a pass touches many nodes whose set did
  // not change, such as the node of an instance that became Ready).
  bool SameInstances(const std::vector<const dcufleet::v1::InstanceSpec*>& specs) const;
  // The encoded entry of `instance_id`, nullptr when this set lacks it.
  // `hint` is where it most likely is (sets keep their order).
  const std::string* Find(const std::string& instance_id, size_t hint) const;
};

// The encoded set for `specs`, reusing the entries of `previous` (nullptr:
// none) for instances it already has.
EncodedAssignment EncodeAssignment(const std::vector<const dcufleet::v1::InstanceSpec*>& specs,
                                   const EncodedAssignment* previous);

}  // namespace dcu::controller
