#pragma once
// Linux "list format" for CPU and NUMA sets, as in /proc/self/status Cpus_allowed_list and
// /sys/devices/system/node/online: "0-7,112-119". Pure.
#include <string>
#include <string_view>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

// Sorted, de-duplicated ids → "0-3,8,10-11". Empty input → "".
std::string formatCpuList(std::vector<int> ids);
// "0-3,8" → {0,1,2,3,8}. Whitespace and a trailing newline are tolerated.
Result<std::vector<int>> parseCpuList(std::string_view text);

}  // namespace tlaunch
