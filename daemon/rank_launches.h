#pragma once
// From the frontend's NodeLaunch to the exact argv/env/binding of each rank process.
#include <string>
#include <vector>

#include "bootstrap/rank_env.h"
#include "daemon/rank_spawner.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {

Result<std::vector<RankLaunch>> buildRankLaunches(const NodeLaunch& launch);

}  // namespace tlaunch
