#include "daemon/inventory.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "binding/hwloc_topology.h"
#include "binding/topology_json.h"
#include "tlaunch/version.h"

namespace tlaunch {

int pickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  int port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

Json collectInventory(const InventoryRequest& req) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  Json inv = {{"hostname", host}, {"node", req.node_name}, {"version", kVersion}, {"free_port", pickFreePort()}};
  auto topo = loadTopology(req.topology_xml);
  if (topo) inv["topology"] = topologyToJson(*topo);
  else inv["topology_error"] = topo.error().message;
  return inv;
}

}  // namespace tlaunch
