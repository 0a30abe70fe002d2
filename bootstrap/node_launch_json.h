#pragma once
#include "bootstrap/message.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {
// What every node's launch shares, sent once per job (the "job" message) and left out of each
// launch: the environment every rank starts from, and the variables every rank of the job has.
struct SharedLaunch {
  bool has_base_env = false;  // every node starts from the same environment
  std::vector<std::string> base_env;
  std::vector<std::string> rank_env;  // "K=V" that every rank of the job has
};
SharedLaunch sharedLaunchOf(const std::vector<NodeLaunch>& nodes);
Json sharedLaunchToJson(const SharedLaunch& s);
Result<SharedLaunch> sharedLaunchFromJson(const Json& j);

// With `shared`, the launch leaves out what it holds, and what all of this node's ranks share is
// said once ("node_env"); decoding needs the same shared part and gives back the whole launch.
Json nodeLaunchToJson(const NodeLaunch& n, const SharedLaunch* shared = nullptr);
Result<NodeLaunch> nodeLaunchFromJson(const Json& j, const SharedLaunch* shared = nullptr);
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
