#pragma once

// libprotobuf writes its own unformatted lines to stderr ("[libprotobuf
// ERROR google/protobuf/wire_format_lite.cc:618] String field ... contains
// invalid UTF-8 data") — one per garbage message a peer sends, so a hostile
// client could fill the controller's log. RouteProtobufLogs sends them
// through the project's logger instead: formatted like every other line,
// and at most `per_minute` a minute, with the count of those dropped.

namespace dcu::common {

void RouteProtobufLogs(int per_minute = 10);

}  // namespace dcu::common
