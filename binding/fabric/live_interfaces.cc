// The thin edge of fabric discovery that asks the kernel (getifaddrs, SIOCGIFMTU) which
// interfaces are up and their IPv4 addresses; everything else reads sysfs (fabric_discovery.cc).
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <map>

#include "binding/fabric/fabric_discovery.h"
#include "binding/fabric/ipv4_net.h"

namespace tlaunch {

Result<std::vector<LiveInterface>> listLiveInterfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    return fail(Errc::io, std::string("getifaddrs failed: ") + std::strerror(errno));
  std::map<std::string, LiveInterface> byName;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    LiveInterface& iface = byName[a->ifa_name];
    iface.name = a->ifa_name;
    iface.up = (a->ifa_flags & IFF_UP) != 0;
    iface.running = (a->ifa_flags & IFF_RUNNING) != 0;
    iface.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    if (!a->ifa_addr) continue;
    if (a->ifa_addr->sa_family == AF_PACKET) {
      iface.type = reinterpret_cast<const sockaddr_ll*>(a->ifa_addr)->sll_hatype;
    } else if (a->ifa_addr->sa_family == AF_INET) {
      auto addr = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
      int prefix = 32;
      if (a->ifa_netmask)
        prefix = std::popcount(ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr));
      iface.ipv4.push_back(Ipv4Address{formatIpv4(addr), prefix});
    }
  }
  freeifaddrs(list);

  int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::vector<LiveInterface> result;
  for (auto& [name, iface] : byName) {
    if (sock >= 0) {
      ifreq request{};
      std::strncpy(request.ifr_name, name.c_str(), IFNAMSIZ - 1);
      if (::ioctl(sock, SIOCGIFMTU, &request) == 0) iface.mtu = request.ifr_mtu;
    }
    result.push_back(std::move(iface));
  }
  if (sock >= 0) ::close(sock);
  std::sort(result.begin(), result.end(),
            [](const LiveInterface& a, const LiveInterface& b) { return naturalLess(a.name, b.name); });
  return result;
}

}  // namespace tlaunch
