#pragma once
// What a daemon reports about its node before the plan, in the one typed form that the daemon
// fills (daemon/inventory) and the planner reads (launcher/plan). On the wire it is a CBOR map
// (bootstrap/inventory_codec.h), decoded once, when it arrives.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tlaunch/fabric.h"
#include "tlaunch/preflight_item.h"
#include "tlaunch/topology.h"

namespace tlaunch {

struct NodeInventory {
  std::string hostname;  // the node's own host name
  std::string boot_id;   // the kernel's boot id: with the host name and pid_ns, one machine (until it reboots)
  std::string pid_ns;    // the daemon's pid namespace (inode): containers sharing a host name have their own
  std::string node;      // the name tlaunch gives it
  std::string version;   // tlaunchd's
  int free_port = 0;     // a free port below the ephemeral range, for MASTER_PORT (0: none found)
  int probe_port = 0;    // where the daemon accepts the other daemons' reachability probes
  // The user's MASTER_PORT (asked in the daemon's config) cannot be listened on here now.
  bool master_port_in_use = false;
  int cached_age_s = -1;  // a warm node's inventory and preflight taken this long ago (-1: just now)
  bool topology_from_cache = false;  // the live topology came from this boot's cache, not hwloc's discovery
  // Absent: topology_error says why. Immutable and shared: identical machines report identical
  // topologies, and the frontend keeps one snapshot for all of them (bootstrap/inventory_codec).
  std::shared_ptr<const TopologySnapshot> topology;
  std::string topology_error;
  std::optional<NodeFabric> fabric;  // absent: fabric_error says why
  std::string fabric_error;
  std::optional<std::vector<PreflightItem>> preflight;  // absent: --preflight off
  std::map<std::string, int> port_mtu;                  // "mlx5_0:1" -> active MTU (libibverbs)
  // The GPUs Slurm gave this job on the node: the CUDA_VISIBLE_DEVICES of the daemon's step
  // ("" = not a Slurm step with GPUs). Node by node: a shared node's job gets some of its GPUs.
  std::string slurm_gpus;
};

}  // namespace tlaunch
