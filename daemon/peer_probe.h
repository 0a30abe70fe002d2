#pragma once
// TCP reachability of other nodes' daemons on the chosen network: every probe at once, one
// deadline for all of them.
#include <chrono>
#include <string>
#include <vector>

#include "tlaunch/node_launch.h"

namespace tlaunch {

struct ProbeOutcome {
  ReachTarget target;
  std::string error;  // "" when the connection was made
};

std::vector<ProbeOutcome> probeTargets(const std::vector<ReachTarget>& targets, std::chrono::milliseconds timeout);

// "node1 cannot reach node3 at 10.1.0.3:4242 (timed out); ..." for the failed ones, "" if none.
std::string describeProbeFailures(const std::string& node, const std::vector<ProbeOutcome>& outcomes);

}  // namespace tlaunch
