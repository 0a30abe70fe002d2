#pragma once
#include "bootstrap/message.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {
Json nodeLaunchToJson(const NodeLaunch& n);
Result<NodeLaunch> nodeLaunchFromJson(const Json& j);
// The peers a node probes (NodeLaunch::reach, and `tlaunch preflight`'s "reach" message).
Json reachToJson(const std::vector<ReachTarget>& reach);
Result<std::vector<ReachTarget>> reachFromJson(const Json& j);
// The job's PMIx geometry (namespace, every node's name and ranks), sent once per job and not in
// each node's launch: at N nodes that is O(N) bytes per node, O(N^2) through the frontend.
inline constexpr long long kMaxPmixRanks = 1'000'000;
Json pmixGeometryToJson(const PmixSpec& p);
// Fills p's nspace, node_names and ranks_by_node; checks p.this_node against them.
Result<void> applyPmixGeometry(const Json& j, PmixSpec& p);
}  // namespace tlaunch
