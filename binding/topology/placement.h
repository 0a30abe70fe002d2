#pragma once
// [pure] One node's rank placement: GPU, nearest HCA, NUMA node, cores and memory nodes per local rank.
#include <string>
#include <vector>

#include "tlaunch/result.h"
#include "tlaunch/topology.h"

namespace tlaunch {

// PCI distance classes, nearest first; see RankBinding::path for their meaning.
enum class PciDistance { pix, pxb, phb, node, sys };
const char* pciDistanceName(PciDistance d);  // "PIX" … "SYS"

// Distance between two PCI devices given their bridge paths (GpuDevice::pci_path form) and NUMA nodes.
PciDistance pciDistance(const std::vector<std::string>& path_a, int numa_a, const std::vector<std::string>& path_b,
                        int numa_b);

// True if some port of the HCA is ACTIVE (or ACTIVE_DEFER) according to the topology.
bool hcaHasActivePort(const HcaDevice& hca);
// The port a rank should use: the first ACTIVE one, else the first known port (normally 1).
int hcaPreferredPort(const HcaDevice& hca);

// Plans the local ranks of one node. Deterministic and pure.
// With GPUs: local rank r uses GPU r (bus id order), or gpus[r] when a list is given; it is bound to the GPU's NUMA node, whose cores
// are split evenly and disjointly (whole cores, remainder left free) among the ranks sharing it; its
// HCA is the nearest by PCI path among req.data_ports (the job network's ports on this node), else
// among HCAs with an ACTIVE port (all HCAs when none is known ACTIVE),
// ties spread round-robin. Without GPUs: ranks go round-robin over NUMA nodes that have CPUs;
// fewer ranks than such NUMA nodes each get an equal run of whole NUMA nodes (numa -1 for more
// than one; mem_nodes lists them), the remainder left free.
// A GPU whose NUMA node is unknown is placed on the least-loaded NUMA node. BindMode::numa gives each
// rank its whole NUMA node, BindMode::none no cpus and no mem_nodes. node_name only feeds messages.
// `gpus`, with req.use_gpus: the GPU indices (bus id order) the ranks drive, local rank r the r-th
// of them (--include/--exclude GPU lists); empty: GPUs 0 .. ranks_per_node-1.
Result<std::vector<RankBinding>> planNodeBinding(const TopologySnapshot& topo, const BindingRequest& req,
                                                 const std::string& node_name, const std::vector<int>& gpus = {});

}  // namespace tlaunch
