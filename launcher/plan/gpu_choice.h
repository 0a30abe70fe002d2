#pragma once
// Which GPUs of a node its ranks use (DeepSpeed's --include node1:0,1 / --exclude node1:0),
// resolved against the GPUs the node reported. Pure.
#include <string>
#include <vector>

#include "tlaunch/result.h"
#include "tlaunch/topology.h"

namespace tlaunch {

// A node's GPU list as the command line gave it; indices count GPUs in PCI bus id order
// (nvidia-smi's order with CUDA_DEVICE_ORDER=PCI_BUS_ID). Both empty: every GPU.
struct GpuList {
  std::vector<int> only;      // --include node:0,1 (or --exclude with the node's slot count known)
  std::vector<int> excluded;  // --exclude node:0 where the slot count was not given
  bool given() const { return !only.empty() || !excluded.empty(); }
};

// The GPU indices the node's ranks use, ascending: local rank r drives the r-th of them.
// An index the node does not have is a usage error naming the node and its GPUs.
Result<std::vector<int>> chooseNodeGpus(const TopologySnapshot& topo, const GpuList& list, const std::string& node);

// "0,2,3": the form CUDA_VISIBLE_DEVICES takes.
std::string gpuIndexList(const std::vector<int>& gpus);

}  // namespace tlaunch
