#pragma once
// Gathers the nodes' preflight results, adds the cross-node checks, and decides. Pure.
#include <vector>

#include "binding/preflight/preflight_item.h"
#include "launcher/plan/job_plan.h"

namespace tlaunch {

// Every check of every node, then the cross-node ones, then `measured` (the frontend's own
// cross-node tests, e.g. the RDMA write test between neighbours).
std::vector<PreflightItem> collectPreflight(const std::vector<NodeReport>& nodes,
                                            const std::vector<PreflightItem>& measured = {});
// Fills plan.preflight_items; an error (Errc::preflight) when a check failed, or warned with
// --preflight-strict.
// The checks worth showing: every non-skipped check of each node where one warned or failed.
std::vector<PreflightItem> notablePreflight(const std::vector<PreflightItem>& items);

// `network`, when chosen: a port that is not one of its data ports (a management ConnectX) gets
// no slow-link warning.
Result<void> evaluatePreflight(const JobSpec& spec, const std::vector<NodeReport>& nodes, JobPlan& plan,
                               const std::vector<PreflightItem>& measured = {},
                               const NetworkChoice* network = nullptr);

}  // namespace tlaunch
