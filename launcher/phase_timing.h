#pragma once
// --verbose: how long each node took to reach a launch phase, summarised so that the slow ones
// stand out on 1,000 nodes: "4 nodes in 352 ms (median 246 ms; slowest: node3 352, node2 246)".
#include <string>
#include <utility>
#include <vector>

namespace tlaunch {

// (node, milliseconds since the phase began); at most `slowest` names are listed.
std::string phaseTimingSummary(std::vector<std::pair<std::string, double>> times, size_t slowest = 3);

}  // namespace tlaunch
