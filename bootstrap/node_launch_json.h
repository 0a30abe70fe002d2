#pragma once
#include "bootstrap/message.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {
Json nodeLaunchToJson(const NodeLaunch& n);
Result<NodeLaunch> nodeLaunchFromJson(const Json& j);
// The peers a node probes (NodeLaunch::reach, and `tlaunch preflight`'s "reach" message).
Json reachToJson(const std::vector<ReachTarget>& reach);
Result<std::vector<ReachTarget>> reachFromJson(const Json& j);
}  // namespace tlaunch
