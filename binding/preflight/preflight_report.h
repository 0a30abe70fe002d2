#pragma once
// Preflight results for people (a table per node, fixes underneath) and for programs (JSON,
// which the daemons also use to send their items to the frontend).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "binding/preflight/preflight_item.h"
#include "tlaunch/result.h"

namespace tlaunch {

// One table per node (nodes in order of first appearance; cross-node rows under "all nodes"),
// columns CHECK DEVICE STATUS FOUND EXPECTED, then "fix:" lines for each warn/fail.
std::string renderPreflightTable(const std::vector<PreflightItem>& items);

// "12 pass, 1 warn, 1 fail, 3 skip"
std::string preflightSummary(const std::vector<PreflightItem>& items);

nlohmann::json preflightToJson(const std::vector<PreflightItem>& items);
Result<std::vector<PreflightItem>> preflightFromJson(const nlohmann::json& j);

}  // namespace tlaunch
