#pragma once
#include "bootstrap/message.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {
Json nodeLaunchToJson(const NodeLaunch& n);
Result<NodeLaunch> nodeLaunchFromJson(const Json& j);
}  // namespace tlaunch
