#pragma once
// [pure] `tlaunch topo`: what the node looks like to the planner, in the style of `nvidia-smi topo -m`.
#include <string>
#include <vector>

#include "binding/topology/gpu_driver_view.h"
#include "tlaunch/topology.h"

namespace tlaunch {

// NUMA nodes, a GPU × HCA matrix of PCI distances (PIX/PXB/PHB/NODE/SYS) with each GPU's NUMA node
// and CPU affinity, the HCAs with ports, state and netdevs, and the chosen GPU → HCA pairing
// (pairing may be empty). Also readable for machines without GPUs or HCAs. `driver`: what NVML
// said of the live machine's NVIDIA GPUs, one line when it was consulted.
std::string renderTopoReport(const TopologySnapshot& topo, const std::vector<RankBinding>& pairing,
                             const GpuDriverFacts& driver = {});

}  // namespace tlaunch
