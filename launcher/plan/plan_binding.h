#pragma once
// The binding part of the plan: rank → GPU → nearest HCA → NUMA node → cores, per node, from
// the topology each daemon reported (DESIGN §3). Pure.
#include <vector>

#include "launcher/plan/job_plan.h"

namespace tlaunch {

// Fills each rank's cpus/mem_nodes and binding variables, the node's apply_binding flag, and
// plan.details["ranks"] (the manifest) and ["fingerprint"]. `user_set`: variables the user
// chose, which the plan does not override (UCX_NET_DEVICES, CUDA_DEVICE_ORDER).
Result<void> planBindings(const JobSpec& spec, const std::vector<NodeReport>& nodes, const PlanContext& ctx,
                          JobPlan& plan);

}  // namespace tlaunch
