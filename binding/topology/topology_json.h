#pragma once
// TopologySnapshot and RankBinding ⇄ JSON: daemons send their snapshot to the frontend, which plans
// and sends each daemon its ranks' bindings. Both round-trip exactly.
#include <nlohmann/json_fwd.hpp>

#include "tlaunch/result.h"
#include "tlaunch/topology.h"

namespace tlaunch {

nlohmann::json topologyToJson(const TopologySnapshot& topo);
// Rejects missing or mistyped fields with Errc::protocol naming the field.
Result<TopologySnapshot> topologyFromJson(const nlohmann::json& j);

nlohmann::json rankBindingToJson(const RankBinding& b);
Result<RankBinding> rankBindingFromJson(const nlohmann::json& j);

}  // namespace tlaunch
