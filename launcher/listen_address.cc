#include "launcher/listen_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "binding/fabric/fabric_discovery.h"
#include "launcher/node_source.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

Result<std::string> sourceAddressToward(const std::string& host) {
  if (isIpv6Literal(host))
    return diagnostic(Errc::node_unreachable, "node-ipv6-address", {{"node", host}});
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), "9", &hints, &res); rc != 0 || !res) {
    return diagnostic(Errc::node_unreachable, "node-unresolved", {{"node", host}, {"reason", ::gai_strerror(rc)}});
  }
  sockaddr_in target{};
  std::memcpy(&target, res->ai_addr, sizeof target);
  ::freeaddrinfo(res);
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(Errc::io, std::string("socket: ") + std::strerror(errno));
  sockaddr_in local{};
  socklen_t len = sizeof local;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof target);
  int err = errno;
  if (rc == 0) rc = ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  ::close(fd);
  if (rc != 0) {
    return diagnostic(Errc::node_unreachable, "node-no-route", {{"node", host}, {"reason", std::strerror(err)}});
  }
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf);
  return std::string(buf);
}

std::vector<std::string> ownFabricAddresses(const std::string& sysfs_root_pattern) {
  std::vector<std::string> out;
  std::string sysfs_root = sysfs_root_pattern;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  for (size_t at; (at = sysfs_root.find("{node}")) != std::string::npos;) sysfs_root.replace(at, 6, host);
  auto fabric = discoverNodeFabric(sysfs_root);
  if (!fabric) return out;
  for (const auto& dev : fabric->devices) {
    for (const auto& port : dev.ports) {
      if (port.state != kPortStateActive || port.netdev.empty()) continue;
      for (const auto& nif : fabric->interfaces) {
        if (nif.name != port.netdev || !nif.live || !nif.up) continue;
        for (const auto& a : nif.ipv4)
          if (std::find(out.begin(), out.end(), a.address) == out.end()) out.push_back(a.address);
      }
    }
  }
  return out;
}

std::string localAddressList() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  std::string out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    if (!(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK)) continue;
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace tlaunch
