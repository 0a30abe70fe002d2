#pragma once
// What a daemon tells the frontend about its node before anything is planned.
#include <functional>
#include <string>

#include "bootstrap/message.h"
#include "tlaunch/inventory.h"

namespace tlaunch {

struct InventoryRequest {
  std::string node_name;
  std::string topology_xml;  // "" = the live machine (or HWLOC_XMLFILE)
  std::string sysfs_root = "/";
  // Preflight, run while the inventory is taken: "off", "quick" or "full".
  std::string preflight = "quick";
  bool expect_rdma = true;       // not --net tcp
  double expect_rate_gbps = 0;   // --expect-rate
  int gpus_required = 0;         // -g
  Json user_env = Json::object();  // the ranks' NCCL_* variables: name -> {value, source}
  std::string topology_cache_dir;  // where the live topology is kept between jobs ("" = nowhere)
};

// Never fails as a whole: a part that cannot be read is left out with its reason (topology_error,
// fabric_error) so the frontend can name the node and the reason.
// `live_topology_xml`: the live machine's topology as hwloc XML, for the ranks' PMIx (empty
// when the topology came from a file or could not be loaded).
NodeInventory collectInventory(const InventoryRequest& req, std::string* live_topology_xml = nullptr);

// The GPUs Slurm gave this node's step, as a task of the step sees them: its
// CUDA_VISIBLE_DEVICES when Slurm's GPU plugin set it (SLURM_STEP_GPUS beside it), else "". A
// value the user's environment carried into the step without GPUs allocated is not Slurm's.
// `env` looks a variable up (nullptr when unset).
std::string slurmStepGpus(const std::function<const char*(const char*)>& env);

// A TCP port that was free on every local address a moment ago (bind to port 0, read, close).
int pickFreePort();

// Whether a listener could take `port` on every local address now (as rank 0's TCPStore will):
// the check of the user's --master-port on rank 0's node.
bool portListenable(int port);

}  // namespace tlaunch
