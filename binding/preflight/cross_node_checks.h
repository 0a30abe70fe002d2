#pragma once
// Cross-node preflight (pure): the same rails, rates, MTUs and fabric subnets on every node.
// A node that differs from the rest is named; when no value is shared by a majority, every
// group is named (two groups at different rates: a warning naming both).
#include <map>
#include <string>
#include <vector>

#include "binding/preflight/preflight_item.h"
#include "tlaunch/fabric.h"

namespace tlaunch {

struct CrossNodeInput {
  std::string node;
  NodeFabric fabric;
  std::map<std::string, int> port_mtu;  // "mlx5_0:1" -> active MTU from the verbs probe (optional)
};

// Checks "cross_rails" (warn), "cross_rate" (warn), "cross_mtu" (fail), "cross_subnets" (warn).
std::vector<PreflightItem> crossNodeChecks(const std::vector<CrossNodeInput>& nodes);

}  // namespace tlaunch
