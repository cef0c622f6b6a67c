#include "controller/core/assignment_wire.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/wire_format_lite.h"

namespace dcu::controller {

namespace {

using google::protobuf::io::CodedOutputStream;
using google::protobuf::internal::WireFormatLite;

// A field's tag and a varint after it (a length or a value), as protobuf's
// own encoder writes them.
void AppendTagAndVarint(int field, WireFormatLite::WireType type, uint64_t value, std::string* out) {
  uint8_t buf[20];  // a tag (at most 5 bytes) and a 64-bit varint (at most 10)
  uint8_t* end = WireFormatLite::WriteTagToArray(field, type, buf);
  end = CodedOutputStream::WriteVarint64ToArray(value, end);
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
}

}  // namespace

std::string EncodeAssignmentInstance(const dcufleet::v1::InstanceSpec& spec) {
  const size_t size = spec.ByteSizeLong();
  std::string out;
  out.reserve(size + 16);
  AppendTagAndVarint(dcufleet::v1::Assignment::kInstancesFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED,
                     size, &out);
  const size_t header = out.size();
  out.resize(header + size);
  // ByteSizeLong above cached the sizes this serialisation uses.
  spec.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + header));
  return out;
}

dcufleet::v1::ControllerMessage EncodedAssignmentMessage(
    int64_t generation, const std::vector<std::pair<std::string, std::string>>& entries) {
  dcufleet::v1::ControllerMessage msg;
  std::string* assignment = msg.GetReflection()->MutableUnknownFields(&msg)->AddLengthDelimited(
      dcufleet::v1::ControllerMessage::kAssignmentFieldNumber);
  size_t size = 11;  // the generation's tag and varint, at most
  for (const auto& e : entries) size += e.second.size();
  assignment->reserve(size);
  // Field order as a generated serialiser writes it: generation (1) first.
  if (generation != 0) {
    AppendTagAndVarint(dcufleet::v1::Assignment::kGenerationFieldNumber, WireFormatLite::WIRETYPE_VARINT,
                       static_cast<uint64_t>(generation), assignment);
  }
  for (const auto& e : entries) assignment->append(e.second);
  return msg;
}

bool EncodedAssignment::SameInstances(const std::vector<const dcufleet::v1::InstanceSpec*>& specs) const {
  if (instances.size() != specs.size()) return false;
  for (size_t i = 0; i < instances.size(); ++i) {
    if (instances[i].first != specs[i]->instance_id()) return false;
  }
  return true;
}

const std::string* EncodedAssignment::Find(const std::string& instance_id, size_t hint) const {
  if (hint < instances.size() && instances[hint].first == instance_id) return &instances[hint].second;
  for (const auto& [id, bytes] : instances) {
    if (id == instance_id) return &bytes;
  }
  return nullptr;
}

EncodedAssignment EncodeAssignment(const std::vector<const dcufleet::v1::InstanceSpec*>& specs,
                                   const EncodedAssignment* previous) {
  EncodedAssignment out;
  out.instances.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const dcufleet::v1::InstanceSpec& spec = *specs[i];
    const std::string* known = previous ? previous->Find(spec.instance_id(), i) : nullptr;
    out.instances.emplace_back(spec.instance_id(), known ? *known : EncodeAssignmentInstance(spec));
  }
  return out;
}

}  // namespace dcu::controller
