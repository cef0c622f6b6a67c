#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "dcufleet/v1/types.pb.h"

namespace dcu::agent {

// The TCP ports something listens on at this host, read from the kernel's
// socket tables (/proc/net/tcp and tcp6, state 0A = LISTEN), so that the
// controller does not place an instance on a port an unrelated service
// already holds: before, it found out by a failed launch ("address already
// in use", port_in_use) and retried elsewhere (issue 15's measurement: three
// such failures in 2 s from one held port).
//
// Any listener counts, whatever address it is bound to: an engine binds
// 0.0.0.0 ({host}), which fails on a port held on any address.

// Only ports an instance could be given: below it the port is privileged
// and never an instance's, and the list stays short on a busy host.
inline constexpr int kLowestInstancePort = 1024;
// Nor ports in the kernel's ephemeral range (net.ipv4.ip_local_port_range,
// from 32768 by default): instance ports belong below it (one inside it can
// be taken by any outgoing connection: a slurmd of the Slurm bench lost its
// port that way), and listeners there come and go (servers bound to port
// 0), each change resending the whole inventory, as a test saw.
int EphemeralPortsStart();
// At most this many are reported (the lowest); the controller refuses more.
inline constexpr int kMaxListenPortsReported = 4096;

// Parses one socket table's text. Adds the listening ports (from
// kLowestInstancePort, below EphemeralPortsStart()) to `ports`; a line that is not a socket entry is
// skipped and named in `problems` ("/proc/net/tcp line 7: ...", at most
// three per table), never fatal.
void ParseSocketTable(absl::string_view text, absl::string_view source, std::set<int>* ports,
                      std::vector<std::string>* problems);

// Asks the kernel for its listening TCP sockets over NETLINK_SOCK_DIAG
// (IPv4 and IPv6), with only TCP_LISTEN in the state filter. Reading
// /proc/net/tcp walks every bucket of the established hash whatever is in
// it: 6.7 ms of CPU per read of both tables on a host with 262,144 buckets
// and 88 sockets, more than a whole inventory costs the agent otherwise
// (1.15 ms); a LISTEN-only dump skips that walk: 0.033 ms
// (bench/inventory: BM_ListenPorts_*). False (with `error`) when the kernel
// or a sandbox refuses the socket.
bool ReadListeningPortsNetlink(std::set<int>* ports, std::string* error);

// The ports listened on at this host (from kLowestInstancePort, below
// EphemeralPortsStart()), less `own` (this agent's instances' ports: the
// controller knows them), ascending, at most
// kMaxListenPortsReported. `proc_net` empty: the kernel's answer over
// netlink, else /proc/net's tables when netlink is refused; a directory:
// its tables (tcp, tcp6). A table that cannot be read (no IPv6: no tcp6) is
// skipped; `problems` says so only for tcp.
std::vector<int> ForeignListenPorts(const std::string& proc_net, const std::set<int>& own,
                                    std::vector<std::string>* problems);

// What a report carries: ForeignListenPorts less the ports of `instances`
// (this agent's: they come and go with every assignment, and left in each
// would change the inventory's digest and resend it whole), into
// `foreign_listen_ports`, and a `listen_ports_unreadable` finding per
// problem.
void FillForeignListenPorts(const std::string& proc_net,
                            const std::vector<dcufleet::v1::InstanceStatus>& instances,
                            dcufleet::v1::NodeInventory* inventory);

}  // namespace dcu::agent
