#pragma once
// Edge: the host facts the preflight checks need besides the fabric: RLIMIT_MEMLOCK,
// /dev/infiniband/uverbs* access and the GPUDirect RDMA kernel module.
#include <string>
#include <vector>

#include "binding/preflight/preflight_checks.h"
#include "tlaunch/fabric.h"

namespace tlaunch {

MemlockLimit readMemlockLimit();  // getrlimit(RLIMIT_MEMLOCK) of this process

// The uverbs node of each device (from <sysfsRoot>/sys/class/infiniband/<dev>/device/
// infiniband_verbs/uverbsN) and whether <devDir>/uverbsN opens read-write.
std::vector<UverbsNode> findUverbsNodes(const NodeFabric& fabric, const std::string& sysfsRoot,
                                        const std::string& devDir = "/dev/infiniband");

// nvidia_peermem / nv_peer_mem, as NCCL looks for them (src/transport/net_ib/gdr.cc):
// <root>/sys/module/nvidia_peermem, <root>/sys/kernel/mm/memory_peers/nv_mem{,_nc}/version,
// or a line in <root>/proc/modules. Each entry says where it was found.
std::vector<std::string> findGpudirectModules(const std::string& root);

HostFacts gatherHostFacts(const NodeFabric& fabric, const std::string& sysfsRoot);

}  // namespace tlaunch
