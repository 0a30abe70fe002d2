#pragma once
// The cross-node checks that need the daemons' help, run between the inventories and the plan:
// the RDMA write test between neighbours (--preflight=full) and, for `tlaunch preflight`, the
// reachability probes a job would make on the network it would choose. Their results are
// preflight items like the nodes' own. Pure: replies in, messages out; the session sends them.
#include <memory>
#include <string>
#include <vector>

#include "launcher/plan/job_plan.h"
#include "launcher/rdma_pair_coordinator.h"

namespace tlaunch {

class CrossNodePreflight {
 public:
  CrossNodePreflight(const JobSpec& spec, const PlanContext& context, const Json& daemon_config,
                     std::vector<NodeReport> reports);
  ~CrossNodePreflight();
  // The first messages; none (and done()) when there is nothing to ask the daemons.
  std::vector<RdmaPairMessage> start();
  // A daemon's "rdma_*_done" or "reached"; the next messages.
  std::vector<RdmaPairMessage> onMessage(int node, const Json& msg);
  bool done() const { return stage_ == Stage::done; }
  // What is still awaited, for a timeout message: "the RDMA write test (node2, node3)".
  std::string waitingFor() const;
  const std::vector<PreflightItem>& items() const { return items_; }

 private:
  enum class Stage { rdma_pairs, reachability, done };
  std::vector<RdmaPairMessage> next();
  std::vector<RdmaPairMessage> startReachability();
  void onReached(int node, const Json& msg);

  const JobSpec& spec_;
  const PlanContext& context_;
  std::string sysfs_root_;
  std::vector<NodeReport> reports_;
  Stage stage_ = Stage::rdma_pairs;
  std::unique_ptr<RdmaPairCoordinator> pairs_;
  std::vector<bool> reach_waiting_;
  std::vector<PreflightItem> items_;
};

}  // namespace tlaunch
