#include "agent/procscan/listen_ports.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/probe/findings.h"
#include "common/fs_util.h"

namespace dcu::agent {
namespace {

constexpr int kMaxProblemsPerTable = 3;
// The kernel's TCP_LISTEN (include/net/tcp_states.h), as the table prints it.
constexpr absl::string_view kListenState = "0A";

// A socket table: ~150 bytes a socket; 16 MiB is ~100,000 of them.
constexpr size_t kMaxTableBytes = 16 << 20;

bool Reportable(int port) { return port >= kLowestInstancePort && port < EphemeralPortsStart(); }

std::vector<int> WithoutOwn(const std::set<int>& ports, const std::set<int>& own) {
  std::vector<int> out;
  for (int p : ports) {
    if (own.count(p)) continue;
    if (static_cast<int>(out.size()) >= kMaxListenPortsReported) break;
    out.push_back(p);
  }
  return out;
}

}  // namespace

int EphemeralPortsStart() {
  // Read once: changing it needs root and is rare; the default otherwise.
  static const int start = [] {
    int low = 0;
    absl::StatusOr<std::string> text = common::ReadSmallFile("/proc/sys/net/ipv4/ip_local_port_range");
    if (text.ok()) {
      std::vector<absl::string_view> fields =
          absl::StrSplit(absl::StripAsciiWhitespace(*text), absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (fields.empty() || !absl::SimpleAtoi(fields[0], &low)) low = 0;
    }
    return low > kLowestInstancePort && low <= 65535 ? low : 32768;
  }();
  return start;
}

void ParseSocketTable(absl::string_view text, absl::string_view source, std::set<int>* ports,
                      std::vector<std::string>* problems) {
  int line_number = 0, reported = 0;
  auto problem = [&](absl::string_view why) {
    if (reported++ < kMaxProblemsPerTable) {
      problems->push_back(absl::StrCat(source, " line ", line_number, ": ", why));
    }
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    // The header ("sl  local_address rem_address   st ...").
    if (line_number == 1 && absl::StartsWith(line, "sl")) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    // "0:", local "ADDR:PORT", remote "ADDR:PORT", state; the rest is not read.
    if (fields.size() < 4 || !absl::EndsWith(fields[0], ":")) {
      problem("not a socket entry (expected 'N: LOCAL REMOTE STATE ...')");
      continue;
    }
    if (fields[3] != kListenState) continue;
    const size_t colon = fields[1].rfind(':');
    uint32_t port = 0;
    if (colon == absl::string_view::npos || fields[1].size() - colon - 1 != 4 ||
        !absl::SimpleHexAtoi(fields[1].substr(colon + 1), &port)) {
      problem(absl::StrCat("local address '", fields[1].substr(0, 64),
                           "' is not ADDRESS:PORT in hex"));
      continue;
    }
    if (Reportable(static_cast<int>(port))) ports->insert(static_cast<int>(port));
  }
}

bool ReadListeningPortsNetlink(std::set<int>* ports, std::string* error) {
  const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) {
    *error = absl::StrCat("NETLINK_SOCK_DIAG socket: ", strerror(errno));
    return false;
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  for (const uint8_t family : {static_cast<uint8_t>(AF_INET), static_cast<uint8_t>(AF_INET6)}) {
    struct {
      nlmsghdr header;
      inet_diag_req_v2 request;
    } message{};
    message.header.nlmsg_len = sizeof(message);
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    message.header.nlmsg_seq = family;
    message.request.sdiag_family = family;
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = 1u << TCP_LISTEN;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (sendto(fd, &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
      *error = absl::StrCat("NETLINK_SOCK_DIAG request: ", strerror(errno));
      return false;
    }
    // Aligned for nlmsghdr; 32 KiB holds ~200 sockets per read.
    alignas(nlmsghdr) char buffer[32768];
    bool done = false;
    while (!done) {
      const ssize_t got = recv(fd, buffer, sizeof(buffer), 0);
      if (got < 0) {
        if (errno == EINTR) continue;
        *error = absl::StrCat("NETLINK_SOCK_DIAG answer: ", strerror(errno));
        return false;
      }
      if (got == 0) break;
      int left = static_cast<int>(got);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_DONE) {
          done = true;
          break;
        }
        if (h->nlmsg_type == NLMSG_ERROR) {
          const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
          // IPv6 not built in: no IPv6 listeners, not a failure.
          if (family == AF_INET6 && (e->error == -ENOENT || e->error == -EAFNOSUPPORT)) {
            done = true;
            break;
          }
          *error = absl::StrCat("NETLINK_SOCK_DIAG: ", strerror(-e->error));
          return false;
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
            h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) {
          continue;
        }
        const auto* socket_entry = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
        const int port = ntohs(socket_entry->id.idiag_sport);
        if (socket_entry->idiag_state == TCP_LISTEN && Reportable(port)) {
          ports->insert(port);
        }
      }
    }
  }
  return true;
}

std::vector<int> ForeignListenPorts(const std::string& proc_net, const std::set<int>& own,
                                    std::vector<std::string>* problems) {
  std::set<int> ports;
  std::string tables = proc_net;
  if (tables.empty()) {
    std::string error;
    if (ReadListeningPortsNetlink(&ports, &error)) return WithoutOwn(ports, own);
    ports.clear();
    problems->push_back(absl::StrCat(error, "; read /proc/net's tables instead (slower)"));
    tables = "/proc/net";
  }
  for (const char* table : {"tcp", "tcp6"}) {
    const std::string path = absl::StrCat(tables, "/", table);
    absl::StatusOr<std::string> text = common::ReadSmallFile(path, kMaxTableBytes);
    if (!text.ok()) {
      // A host without IPv6 has no tcp6; one without tcp cannot be read at all.
      if (absl::string_view(table) == "tcp") {
        problems->push_back(absl::StrCat(text.status().message(), "; ports held by other services "
                                         "are not known to the controller"));
      }
      continue;
    }
    ParseSocketTable(*text, path, &ports, problems);
  }
  return WithoutOwn(ports, own);
}

void FillForeignListenPorts(const std::string& proc_net,
                            const std::vector<dcufleet::v1::InstanceStatus>& instances,
                            dcufleet::v1::NodeInventory* inventory) {
  std::set<int> own;
  for (const auto& st : instances) {
    if (st.port() > 0) own.insert(st.port());
  }
  std::vector<std::string> problems;
  for (int port : ForeignListenPorts(proc_net, own, &problems)) {
    inventory->add_foreign_listen_ports(port);
  }
  for (const std::string& p : problems) {
    *inventory->add_findings() =
        MakeFinding(dcufleet::v1::FINDING_WARNING, "listen_ports_unreadable", "proc_net", p);
  }
}

}  // namespace dcu::agent
