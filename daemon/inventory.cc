#include "daemon/inventory.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>

#include "binding/fabric/fabric_discovery.h"
#include "binding/topology/gpu_driver_view.h"
#include "binding/topology/hwloc_topology.h"
#include "binding/fabric/nccl_conf.h"
#include "binding/preflight/preflight_host_facts.h"
#include "daemon/preflight_runner.h"
#include "binding/rdma/verbs_api.h"
#include "binding/rdma/verbs_probe.h"
#include "tlaunch/version.h"

namespace tlaunch {

namespace {

// `as_listener`: with SO_REUSEADDR, as torch's TCPStore binds, so that the connections of the
// last job's store left in TIME_WAIT do not count.
bool portFree(int port, bool as_listener) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);  // [::] covers IPv4 too, as TCPStore binds
  bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  if (as_listener) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  ::close(fd);
  return rc == 0;
}

// --topology-xml names a file each daemon reads on its node, on its event loop: a pipe there
// (/dev/stdin, which is the daemon's own, or a FIFO) would block it until the node looked dead.
std::optional<Error> topologyFileProblem(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return std::nullopt;
  return Error{Errc::topology,
               "cannot read topology XML '" + path + "': not a regular file; each node's tlaunchd reads it there, so " +
                   "give a file (a pipe, /dev/stdin or <(...) serves only --dry-run --offline and tlaunch topo)",
               ""};
}

}  // namespace

int pickFreePort() {
  // Below the kernel's ephemeral range: a port from that range can be taken, between our
  // check and rank 0's bind, as the source port of an outgoing connection — even by a rank
  // connecting to MASTER_PORT itself (a TCP self-connect), which torch then reports as
  // "Address already in use".
  int lo = 32768;
  if (std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range"); f) f >> lo;
  const int first = 20000, last = std::max(first + 1, lo - 1);
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 200; ++attempt) {
    int port = first + static_cast<int>(rng() % static_cast<unsigned>(last - first));
    if (portFree(port, false)) return port;
  }
  return 0;
}

bool portListenable(int port) { return portFree(port, true); }

std::string slurmStepGpus(const std::function<const char*(const char*)>& env) {
  const char* step_gpus = env("SLURM_STEP_GPUS");
  const char* visible = env("CUDA_VISIBLE_DEVICES");
  if (!step_gpus || !*step_gpus || !visible) return "";
  return visible;
}

NodeInventory collectInventory(const InventoryRequest& req, std::string* live_topology_xml) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  NodeInventory inv;
  inv.hostname = host;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> inv.boot_id;
  if (struct stat ns {}; ::stat("/proc/self/ns/pid", &ns) == 0) inv.pid_ns = std::to_string(ns.st_ino);
  inv.node = req.node_name;
  inv.version = kVersion;
  inv.free_port = pickFreePort();
  auto topo = [&]() -> Result<TopologySnapshot> {
    if (auto problem = topologyFileProblem(req.topology_xml)) return tl::unexpected(*problem);
    return loadTopology(req.topology_xml, live_topology_xml, req.topology_cache_dir, &inv.topology_from_cache);
  }();
  GpuDriverFacts gpu_driver;  // NVML on the live machine when it has NVIDIA GPUs (hwloc alone knows PCI)
  if (topo) gpu_driver = consultNvidiaDriver(*topo);
  if (topo) inv.topology = std::make_shared<const TopologySnapshot>(std::move(*topo));
  else inv.topology_error = topo.error().message;
  auto fabric = discoverNodeFabric(req.sysfs_root);
  if (fabric) inv.fabric = *fabric;
  else inv.fabric_error = fabric.error().message;
  if (req.preflight != "off" && fabric) {
    PreflightOptions o;
    o.node = req.node_name;
    o.level = req.preflight == "full" ? PreflightLevel::full : PreflightLevel::quick;
    o.expect_rdma = req.expect_rdma;
    o.expect_rate_gbps = req.expect_rate_gbps;
    o.gpus_required = req.gpus_required;
    o.gpus_found = inv.topology ? static_cast<int>(inv.topology->gpus.size()) : 0;
    o.topology_error = inv.topology_error;
    o.gpu_driver = std::move(gpu_driver);
    o.sysfs_root_is_capture = req.sysfs_root != "/";
    o.host = gatherHostFacts(*fabric, req.sysfs_root);
    for (auto it = req.user_env.begin(); it != req.user_env.end(); ++it)
      o.environment[it.key()] = {getString(it.value(), "value"), getString(it.value(), "source")};
    const char* conf_env = std::getenv("NCCL_CONF_FILE");
    o.nccl_conf = readNcclConfFiles(conf_env ? conf_env : "", ncclUserHomeDir());
    VerbsProbe probe;
    auto api = makeIbverbsApi();
    inv.preflight = runNodePreflight(*fabric, o, *api, &probe);
    inv.port_mtu = portMtus(probe);
  }
  return inv;
}

}  // namespace tlaunch
