#pragma once
// One preflight finding (the data: include/tlaunch/preflight_item.h) and what the checks ask
// of a list of them.
#include <string>
#include <vector>

#include "tlaunch/preflight_item.h"

namespace tlaunch {

const char* preflightStatusName(PreflightStatus status);  // "pass", "warn", "fail", "skip"

// True when no item failed.
bool preflightPassed(const std::vector<PreflightItem>& items);

}  // namespace tlaunch
