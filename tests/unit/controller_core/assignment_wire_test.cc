#include "controller/core/assignment_wire.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dcu::controller {
namespace {

using dcufleet::v1::ControllerMessage;
using dcufleet::v1::InstanceSpec;

InstanceSpec Spec(const std::string& id, int port) {
  InstanceSpec s;
  s.set_instance_id(id);
  s.set_deployment("qwen3-32b");
  s.set_model_path("/data/models/Qwen3-32B");
  s.set_runtime_kind(dcufleet::v1::RUNTIME_BARE);
  s.set_port(port);
  s.add_device_indices(0);
  s.add_device_indices(3);
  for (const char* a : {"python", "-m", "vllm.entrypoints.openai.api_server", "--port"}) s.add_argv(a);
  s.add_argv(std::to_string(port));
  // One entry: a map's order on the wire is its iteration order, which a
  // copy need not keep (byte-for-byte comparisons below).
  (*s.mutable_env())["VLLM_USE_TRITON_FLASH_ATTN"] = "0";
  s.add_ld_library_path_prefix("/opt/dtk/rocm_smi/lib");
  s.mutable_learned_fix()->add_answered("shared_lib_undefined_symbol");
  s.set_stop_grace_s(30);
  return s;
}

// What a message built field by field carries.
ControllerMessage Built(int64_t generation, const std::vector<InstanceSpec>& specs) {
  ControllerMessage m;
  auto* a = m.mutable_assignment();
  a->set_generation(generation);
  for (const auto& s : specs) *a->add_instances() = s;
  return m;
}

ControllerMessage Encoded(int64_t generation, const std::vector<InstanceSpec>& specs,
                          const EncodedAssignment* previous = nullptr) {
  std::vector<const InstanceSpec*> ptrs;
  for (const auto& s : specs) ptrs.push_back(&s);
  return EncodedAssignmentMessage(generation, EncodeAssignment(ptrs, previous).instances);
}

TEST(AssignmentWireTest, EncodedIsByteForByteWhatABuiltMessageSerialisesTo) {
  const std::vector<std::vector<InstanceSpec>> sets = {
      {}, {Spec("a-1-x", 8000)}, {Spec("a-1-x", 8000), Spec("b-2-y", 8001), Spec("c-r1-1-z", 8002)}};
  for (const int64_t gen : {int64_t{0}, int64_t{1}, int64_t{1796528726651}}) {
    for (const auto& set : sets) {
      SCOPED_TRACE(testing::Message() << "generation " << gen << ", " << set.size() << " instances");
      const std::string wire = Encoded(gen, set).SerializeAsString();
      EXPECT_EQ(wire, Built(gen, set).SerializeAsString());
      // And the agent reads it as an Assignment.
      ControllerMessage parsed;
      ASSERT_TRUE(parsed.ParseFromString(wire));
      ASSERT_TRUE(parsed.has_assignment());
      EXPECT_EQ(parsed.assignment().generation(), gen);
      ASSERT_EQ(parsed.assignment().instances_size(), static_cast<int>(set.size()));
      for (size_t i = 0; i < set.size(); ++i) {
        EXPECT_EQ(parsed.assignment().instances(static_cast<int>(i)).SerializeAsString(),
                  set[i].SerializeAsString());
      }
    }
  }
}

TEST(AssignmentWireTest, KnownInstancesReuseTheirBytesAndNewOnesAreEncoded) {
  std::vector<InstanceSpec> first = {Spec("a-1-x", 8000), Spec("b-2-y", 8001)};
  std::vector<const InstanceSpec*> ptrs = {&first[0], &first[1]};
  EncodedAssignment previous = EncodeAssignment(ptrs, nullptr);
  previous.delivered = true;

  // b stays, a goes, c comes in front. b's bytes are reused, not encoded
  // again: its id stands for them (an attempt's InstanceSpec never changes),
  // so even a spec object that differs under the same id is sent as first
  // encoded — which is how reuse is seen here.
  InstanceSpec b_changed = Spec("b-2-y", 9999);
  std::vector<InstanceSpec> second = {Spec("c-3-z", 8002), b_changed};
  std::vector<const InstanceSpec*> next_ptrs = {&second[0], &second[1]};
  EncodedAssignment next = EncodeAssignment(next_ptrs, &previous);
  EXPECT_FALSE(previous.SameInstances(next_ptrs));
  ASSERT_EQ(next.instances.size(), 2u);
  EXPECT_EQ(next.instances[0].first, "c-3-z");
  EXPECT_EQ(next.instances[1].second, previous.instances[1].second);
  EXPECT_NE(next.instances[1].second, EncodeAssignmentInstance(b_changed));
  EXPECT_EQ(EncodedAssignmentMessage(7, next.instances).SerializeAsString(),
            Built(7, {second[0], first[1]}).SerializeAsString());
  // Without a previous set every instance is encoded from its spec.
  EXPECT_EQ(EncodeAssignment(next_ptrs, nullptr).instances[1].second, EncodeAssignmentInstance(b_changed));

  // The same ids in the same order are the same set; another order, a
  // subset or a superset is not.
  EXPECT_TRUE(previous.SameInstances(ptrs));
  std::vector<const InstanceSpec*> swapped = {&first[1], &first[0]};
  EXPECT_FALSE(previous.SameInstances(swapped));
  EXPECT_FALSE(previous.SameInstances({&first[0]}));
  EXPECT_FALSE(previous.SameInstances({&first[0], &first[1], &second[0]}));
  EXPECT_TRUE(EncodeAssignment({}, &previous).instances.empty());
}

TEST(AssignmentWireTest, AnEmptySetStillClearsTheNode) {
  // A node whose last instance went gets an Assignment with none (it stops
  // what it runs), not an empty message.
  ControllerMessage parsed;
  ASSERT_TRUE(parsed.ParseFromString(Encoded(42, {}).SerializeAsString()));
  ASSERT_TRUE(parsed.has_assignment());
  EXPECT_EQ(parsed.assignment().generation(), 42);
  EXPECT_EQ(parsed.assignment().instances_size(), 0);
}

}  // namespace
}  // namespace dcu::controller
