#pragma once
// From the frontend's NodeLaunch to the exact argv/env/binding of each rank process.
#include <string>
#include <vector>

#include "daemon/rank_spawner.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {

// The value of `key` in a "K=V" list ("" if absent; the last one wins).
std::string envValue(const std::vector<std::string>& env, const std::string& key);
// base overlaid with overrides (same key: the override wins, keeping base's order).
std::vector<std::string> mergeEnv(const std::vector<std::string>& base, const std::vector<std::string>& overrides);
Result<std::vector<RankLaunch>> buildRankLaunches(const NodeLaunch& launch);

}  // namespace tlaunch
