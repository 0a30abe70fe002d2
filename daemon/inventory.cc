#include "daemon/inventory.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "binding/fabric_discovery.h"
#include "binding/fabric_json.h"
#include "binding/hwloc_topology.h"
#include "binding/nccl_conf.h"
#include "binding/preflight_host_facts.h"
#include "binding/preflight_report.h"
#include "binding/preflight_runner.h"
#include "binding/verbs_api.h"
#include "binding/verbs_probe.h"
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
  auto fabric = discoverNodeFabric(req.sysfs_root);
  if (fabric) inv["fabric"] = fabricToJson(*fabric);
  else inv["fabric_error"] = fabric.error().message;
  if (req.preflight != "off" && fabric) {
    PreflightOptions o;
    o.node = req.node_name;
    o.level = req.preflight == "full" ? PreflightLevel::full : PreflightLevel::quick;
    o.expect_rdma = req.expect_rdma;
    o.expect_rate_gbps = req.expect_rate_gbps;
    o.gpus_required = req.gpus_required;
    o.gpus_found = topo ? static_cast<int>(topo->gpus.size()) : 0;
    o.sysfs_root_is_capture = req.sysfs_root != "/";
    o.host = gatherHostFacts(*fabric, req.sysfs_root);
    for (auto it = req.user_env.begin(); it != req.user_env.end(); ++it)
      o.environment[it.key()] = {getString(it.value(), "value"), getString(it.value(), "source")};
    const char* conf_env = std::getenv("NCCL_CONF_FILE");
    o.nccl_conf = readNcclConfFiles(conf_env ? conf_env : "", ncclUserHomeDir());
    VerbsProbe probe;
    auto api = makeIbverbsApi();
    inv["preflight"] = preflightToJson(runNodePreflight(*fabric, o, *api, &probe));
    inv["port_mtu"] = portMtus(probe);
  }
  return inv;
}

}  // namespace tlaunch
