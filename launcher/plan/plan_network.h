#pragma once
// The network part of the plan (DESIGN §4): one subnet common to every node, each node's
// interface on it, and the variables that steer every layer onto it. Pure.
#include <optional>
#include <vector>

#include "binding/fabric/network_choice.h"
#include "launcher/plan/job_plan.h"

namespace tlaunch {

// How many nodes list an RDMA device, of those that reported their fabric.
// Nodes with an RDMA fabric that carries IP (InfiniBand, RoCE) and without one. A node whose
// only RDMA devices are AWS EFA counts as without (EFA has no IP interface: the job's sockets
// run on its Ethernet, NCCL reaches EFA through the aws-ofi-nccl plugin), and in `efa` too.
struct RdmaPresence {
  int with = 0;
  int without = 0;
  int efa = 0;
  std::vector<std::string> with_names, without_names, efa_names;
};
RdmaPresence rdmaPresence(const std::vector<NodeReport>& nodes);

// nullopt when the job needs no network choice (every node is this host and no --net* flag).
Result<std::optional<NetworkChoice>> chooseJobNetwork(const JobSpec& spec, const std::vector<NodeReport>& nodes,
                                                      const PlanContext& ctx);
// --net auto on a cluster where no node has an RDMA device: the job runs over TCP (not refused).
bool plainEthernet(const JobSpec& spec, const RdmaPresence& rdma);

// plan.network and plan.network_env: the choice and the fabric variables of each node's first
// rank (after planBindings: its HCA is in plan.manifest). A user's variable that defeats the
// choice on some node (judged against that node's interfaces) is also one warning in
// plan.warnings, naming the nodes.
void applyNetworkEnv(const NetworkChoice& choice, const PlanContext& ctx, const std::vector<NodeReport>& nodes,
                     JobPlan& plan);

// The peers each node probes before any rank starts (--check-reachability): the next node
// (ring) or every other node (all), at its address on the chosen network. Empty lists when off.
std::vector<std::vector<ReachTarget>> reachabilityTargets(const JobSpec& spec, const std::vector<NodeReport>& nodes,
                                                          const std::optional<NetworkChoice>& network);

}  // namespace tlaunch
