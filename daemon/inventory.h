#pragma once
// What a daemon tells the frontend about its node before anything is planned.
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
};

// Never fails as a whole: a part that cannot be read is left out with its reason (topology_error,
// fabric_error) so the frontend can name the node and the reason.
// `live_topology_xml`: the live machine's topology as hwloc XML, for the ranks' PMIx (empty
// when the topology came from a file or could not be loaded).
NodeInventory collectInventory(const InventoryRequest& req, std::string* live_topology_xml = nullptr);

// A TCP port that was free on every local address a moment ago (bind to port 0, read, close).
int pickFreePort();

}  // namespace tlaunch
