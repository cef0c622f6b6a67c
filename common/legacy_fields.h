#pragma once

// Documents written before runtime kinds, plan verdicts and finding
// severities were enums carry them as strings under field numbers that are
// now reserved (types.proto, deploy.proto). Parsing such a document keeps
// those strings as unknown fields; UpgradeLegacyFields turns them into the
// enum fields, through the name tables of common/enum_names.h, and drops
// them. Call it wherever a stored or received serialized message is parsed:
// the controller's store (deployments, inventories, catalog rows) and the
// agent's recovered instance specs.

#include "google/protobuf/message.h"

namespace dcu::common {

// Walks `message` and every message inside it. A legacy string that names no
// known value leaves the enum UNSPECIFIED (refused downstream, never
// guessed); an enum already set is kept. Returns the number of legacy
// fields converted.
int UpgradeLegacyFields(google::protobuf::Message* message);

}  // namespace dcu::common
