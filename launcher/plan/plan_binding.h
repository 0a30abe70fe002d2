#pragma once
// The binding part of the plan: rank → GPU → nearest HCA → NUMA node → cores, per node, from
// the topology each daemon reported (DESIGN §3). Pure.
#include <vector>

#include "launcher/plan/job_plan.h"

namespace tlaunch {

// Fills each rank's cpus/mem_nodes, the node's apply_binding flag, plan.manifest and
// plan.node_gpus (for the rank environment), and plan.details["ranks"] and ["fingerprint"].
// `gpu_lists`: each node's GPU list (the user's inside Slurm's), one per node. `network` (may be
// null): the job's network; a rank's HCA is the nearest of its node's data ports there.
Result<void> planBindings(const JobSpec& spec, const std::vector<NodeReport>& nodes, const PlanContext& ctx,
                          const std::vector<GpuList>& gpu_lists, const NetworkChoice* network, JobPlan& plan);

}  // namespace tlaunch
