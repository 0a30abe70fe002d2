#pragma once
// [pure] `tlaunch topo`: what the node looks like to the planner, in the style of `nvidia-smi topo -m`.
#include <string>
#include <vector>

#include "tlaunch/topology.h"

namespace tlaunch {

// NUMA nodes, a GPU × HCA matrix of PCI distances (PIX/PXB/PHB/NODE/SYS) with each GPU's NUMA node
// and CPU affinity, the HCAs with ports, state and netdevs, and the chosen GPU → HCA pairing
// (pairing may be empty). Also readable for machines without GPUs or HCAs.
std::string renderTopoReport(const TopologySnapshot& topo, const std::vector<RankBinding>& pairing);

}  // namespace tlaunch
