#pragma once
// Node-local preflight checks (pure): over what discovery found (NodeFabric) and facts about
// the host gathered at the edge (preflight_host_facts.h). Cheap checks first; see
// shared/research/FABRIC.md §6 and §7 for why each one exists.
#include <cstdint>
#include <string>
#include <vector>

#include "binding/fabric/nccl_conf.h"
#include "binding/preflight/preflight_item.h"
#include "binding/topology/gpu_driver_view.h"
#include "binding/fabric/user_env.h"
#include "tlaunch/fabric.h"

namespace tlaunch {

enum class PreflightLevel { quick, full };

// RLIMIT_MEMLOCK as getrlimit reports it.
struct MemlockLimit {
  bool known = false;
  bool soft_unlimited = false;
  std::uint64_t soft_bytes = 0;
  bool hard_unlimited = false;
  std::uint64_t hard_bytes = 0;
};

// Below this, registering NCCL/UCX buffers fails at scale; RDMA stacks want "unlimited".
inline constexpr std::uint64_t kMinMemlockBytes = std::uint64_t{1} << 30;  // 1 GiB

struct UverbsNode {
  std::string device;      // "mlx5_0"
  std::string path;        // "/dev/infiniband/uverbs0", "" when sysfs names none
  bool accessible = false;  // opened read-write
  std::string error;       // strerror when not accessible
};

// Facts about the host that the checks need besides the fabric (edge-gathered).
struct HostFacts {
  MemlockLimit memlock;
  std::vector<UverbsNode> uverbs;
  std::vector<std::string> gpudirect_modules;  // "nvidia_peermem (/sys/module/nvidia_peermem)"
};

struct PreflightOptions {
  std::string node;
  PreflightLevel level = PreflightLevel::quick;
  bool expect_rdma = true;        // the job wants RDMA (not --net tcp)
  double expect_rate_gbps = 0;    // --expect-rate; 0 = not given
  int gpus_required = 0;          // -g; 0 = not given
  int gpus_found = 0;             // the GPUs the plan may use (those NVML lists, when it was asked)
  std::string topology_error;     // why the node's topology could not be read: gpus_found means nothing
  GpuDriverFacts gpu_driver;      // what NVML said; not consulted: no NVIDIA GPU on the live machine
  bool sysfs_root_is_capture = false;  // --sysfs-root other than "/": nothing live to probe
  bool launcher_sets_nccl_env = true;  // tlaunch exports NCCL_IB_DISABLE=0 / NCCL_NET / NCCL_SOCKET_IFNAME
  HostFacts host;
  UserEnv environment;
  std::vector<NcclConfEntry> nccl_conf;
};

// The quick checks: RDMA devices, port state, LID, rates, fabric netdevs, RoCE v2 GIDs,
// /dev/infiniband access, memlock, GPUs and their driver, GPUDirect RDMA module, NCCL
// environment traps.
std::vector<PreflightItem> localPreflightChecks(const NodeFabric& fabric, const PreflightOptions& options);

}  // namespace tlaunch
