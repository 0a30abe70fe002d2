#pragma once
// [edge] A loaded hwloc topology → TopologySnapshot: NUMA nodes and their cores, GPUs (by their
// compute OS devices, else by PCI class on a GPU vendor) with model and UUID, and HCAs with their
// ports and network interfaces, each with its PCI path and nearest CPU NUMA node. Loading the
// topology (live, cached or from XML) is hwloc_topology.h's.
#include <hwloc.h>

#include "tlaunch/topology.h"

namespace tlaunch {

// Fills `snap`'s numa_nodes, gpus and hcas from `topo`; its other fields are the caller's.
void readSnapshot(hwloc_topology_t topo, TopologySnapshot& snap);

}  // namespace tlaunch
