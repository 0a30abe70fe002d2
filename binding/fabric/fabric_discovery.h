#pragma once
// Fabric discovery (edge): RDMA devices, ports, GIDs and netdev facts from sysfs under a
// configurable root; addresses and link state from the live system. The live interface list
// is an input so that tests can inject one; listLiveInterfaces() is the thin getifaddrs edge.
#include <string>
#include <vector>

#include "tlaunch/fabric.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct LiveInterface {
  std::string name;
  int type = -1;  // ARPHRD_* from AF_PACKET (sll_hatype), -1 unknown
  bool up = false;
  bool running = false;
  bool loopback = false;
  int mtu = 0;
  std::vector<Ipv4Address> ipv4;
};

// getifaddrs + SIOCGIFMTU of the calling process's network namespace, in name order.
Result<std::vector<LiveInterface>> listLiveInterfaces();

// Reads <sysfsRoot>/sys/class/{infiniband,net} and merges `live`: an interface described in
// sysfs takes its type, PCI device, dev_port and address from there and its up/running/
// addresses from `live` (absent from `live` = not live). Interfaces only in `live` are kept
// with their live type. Fails only when sysfsRoot is not a directory.
Result<NodeFabric> discoverFabric(const std::string& sysfsRoot, const std::vector<LiveInterface>& live);

// discoverFabric(sysfsRoot, listLiveInterfaces()).
Result<NodeFabric> discoverNodeFabric(const std::string& sysfsRoot = "/");

// "mlx5_2" < "mlx5_10": digit runs compare as numbers.
bool naturalLess(const std::string& a, const std::string& b);

}  // namespace tlaunch
