#pragma once

// The answer of a controller that may not write (issue 21): it is not the
// leader of its PostgreSQL database, or stopped being. UNAVAILABLE, so a
// client's ordinary retry applies, with the leader's address (as the leader
// wrote it in the lease row; empty when none leads) as a payload that
// survives being passed up the layers.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dcu::controller {

inline constexpr char kNotLeaderPayload[] = "type.dcufleet.dev/dcufleet.NotLeader";

inline absl::Status NotLeaderError(absl::string_view leader_address, absl::string_view why) {
  absl::Status s = absl::UnavailableError(absl::StrCat(
      "not the leader (", why, "); ",
      leader_address.empty() ? std::string("no controller leads at the moment")
                             : absl::StrCat("the leader is at ", leader_address)));
  s.SetPayload(kNotLeaderPayload, absl::Cord(leader_address));
  return s;
}

// The leader's address when `s` is a NotLeaderError ("" when none leads);
// nullopt for any other status.
inline std::optional<std::string> NotLeaderAddress(const absl::Status& s) {
  auto p = s.GetPayload(kNotLeaderPayload);
  if (!p) return std::nullopt;
  return std::string(*p);
}

}  // namespace dcu::controller
