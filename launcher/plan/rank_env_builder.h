#pragma once
// Every variable the plan gives a rank, built in one place (DESIGN §4): who the rank is
// (torchrun's, Open MPI's OMPI_COMM_WORLD_* and tlaunch's: bootstrap/rank_env), defaults, its
// GPU and HCA, the network choice's variables, and Open MPI's settings for a direct launch
// under the daemon's PMIx server. The user's values (-x, or inherited) win: such a variable is
// left out here and the rank keeps the value from its base environment. The daemon adds only
// the variables of daemonAddedVariables() at fork time. Pure.
#include <cstddef>
#include <string>
#include <vector>

#include "binding/fabric/network_choice.h"
#include "binding/fabric/user_env.h"
#include "bootstrap/rank_env.h"
#include "tlaunch/topology.h"

namespace tlaunch {

struct RankEnvInput {
  RankIdentity identity;
  JobIdentity job;
  const RankBinding* binding = nullptr;    // the rank's placement; null when none was planned
  bool gpu_rank = false;                   // the rank drives binding->gpu_busid
  std::string visible_gpus;                // CUDA_VISIBLE_DEVICES: the node's chosen GPUs, or Slurm's there
  std::string rocr_visible;
  std::string cwd;                         // the ranks' working directory: their PWD, as srun and mpirun set it                // ROCR_VISIBLE_DEVICES: the node's AMD GPUs by UUID (JobPlan::NodeGpus)
  const NetworkChoice* network = nullptr;  // null: every node is this host (loopback)
  bool network_unasked = false;            // --offline for other hosts: no network, and no loopback either
  std::size_t node = 0;                    // the rank's node in network->nodes
  bool pmix = false;                       // direct launch: the daemon runs a PMIx server
  std::string pmix_tcp_if_include;         // Open MPI's TCP networks without a network choice ("lo")
  bool oversubscribed = false;             // more ranks on the node than CPUs for them
  // The CPUs the rank is bound to and no other rank of the node is (core binding, applied);
  // 0 when it shares them (--bind numa, more ranks than cores) or runs unbound.
  std::size_t own_cpus = 0;
};

// "K=V" entries, in a fixed order; the daemon lays them over the node's base environment.
std::vector<std::string> buildRankEnv(const RankEnvInput& in, const UserEnv& user);

// What only the node knows at fork time, so the plan cannot hold it (docs/ARCHITECTURE.md).
struct DaemonAddedVariable {
  std::string name;  // a name ending in '*' is a prefix
  std::string why;
};
const std::vector<DaemonAddedVariable>& daemonAddedVariables();

}  // namespace tlaunch
