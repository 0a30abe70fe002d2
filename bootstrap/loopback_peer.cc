#include "bootstrap/loopback_peer.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace tlaunch {
namespace {

struct Endpoints {
  sockaddr_storage peer{}, local{};
};

std::optional<Endpoints> endpointsOf(int fd) {
  Endpoints e;
  socklen_t len = sizeof e.peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&e.peer), &len) != 0) return std::nullopt;
  len = sizeof e.local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&e.local), &len) != 0) return std::nullopt;
  if (e.peer.ss_family != e.local.ss_family || (e.peer.ss_family != AF_INET && e.peer.ss_family != AF_INET6))
    return std::nullopt;
  return e;
}

// The connecting socket is the one whose own address is our peer's and whose destination is ours.
void fillId(const Endpoints& e, inet_diag_sockid& id) {
  if (e.peer.ss_family == AF_INET) {
    const auto& p = reinterpret_cast<const sockaddr_in&>(e.peer);
    const auto& l = reinterpret_cast<const sockaddr_in&>(e.local);
    id.idiag_sport = p.sin_port;
    id.idiag_dport = l.sin_port;
    std::memcpy(id.idiag_src, &p.sin_addr, sizeof p.sin_addr);
    std::memcpy(id.idiag_dst, &l.sin_addr, sizeof l.sin_addr);
  } else {
    const auto& p = reinterpret_cast<const sockaddr_in6&>(e.peer);
    const auto& l = reinterpret_cast<const sockaddr_in6&>(e.local);
    id.idiag_sport = p.sin6_port;
    id.idiag_dport = l.sin6_port;
    std::memcpy(id.idiag_src, &p.sin6_addr, sizeof p.sin6_addr);
    std::memcpy(id.idiag_dst, &l.sin6_addr, sizeof l.sin6_addr);
  }
  id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

// The kernel's answer for exactly that socket (NETLINK_SOCK_DIAG, no privilege needed).
std::optional<uid_t> uidBySockDiag(const Endpoints& e) {
  const int nl = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } ask{};
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST;
  ask.request.sdiag_family = static_cast<uint8_t>(e.peer.ss_family);
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = ~0U;
  fillId(e, ask.request.id);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  std::optional<uid_t> uid;
  timeval limit{1, 0};  // the kernel answers at once; never hang a listener on it
  ::setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  if (::sendto(nl, &ask, sizeof ask, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) ==
      static_cast<ssize_t>(sizeof ask)) {
    alignas(nlmsghdr) std::array<char, 8192> buf{};
    const ssize_t n = ::recv(nl, buf.data(), buf.size(), 0);
    if (n > 0) {
      auto len = static_cast<unsigned int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) break;
        const auto* found = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
        // A socket its process still holds (inode 0: a closed one's TIME_WAIT or FIN_WAIT2 stub,
        // which says uid 0), and the one asked about.
        if (found->idiag_inode != 0 && found->id.idiag_sport == ask.request.id.idiag_sport &&
            found->id.idiag_dport == ask.request.id.idiag_dport)
          uid = found->idiag_uid;
        break;
      }
    }
  }
  ::close(nl);
  return uid;
}

// /proc/net/tcp's hex form of an address and port, as the kernel prints them.
std::string procNetText(const sockaddr_storage& a) {
  char text[64];
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    std::snprintf(text, sizeof text, "%08X:%04X", v4.sin_addr.s_addr, ntohs(v4.sin_port));
  } else {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    uint32_t w[4];
    std::memcpy(w, &v6.sin6_addr, sizeof w);
    std::snprintf(text, sizeof text, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], ntohs(v6.sin6_port));
  }
  return text;
}

// Where netlink is not allowed (a seccomp profile): the same fact from /proc/net/tcp(6).
std::optional<uid_t> uidByProcNet(const Endpoints& e) {
  std::ifstream table(e.peer.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6");
  const std::string want_local = procNetText(e.peer), want_remote = procNetText(e.local);
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits;
    long uid = -1;
    int timeout = 0;
    unsigned long inode = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
      continue;
    // Inode 0: a closed socket's stub (uid 0), no process's.
    if (local == want_local && remote == want_remote && uid >= 0 && inode != 0) return static_cast<uid_t>(uid);
  }
  return std::nullopt;
}

}  // namespace

std::optional<uid_t> loopbackPeerUid(int fd) {
  const auto e = endpointsOf(fd);
  if (!e) return std::nullopt;
  if (auto uid = uidBySockDiag(*e)) return uid;
  return uidByProcNet(*e);
}

}  // namespace tlaunch
