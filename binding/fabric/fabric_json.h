#pragma once
// NodeFabric and NetworkChoice <-> JSON: daemons send their fabric to the frontend, which
// chooses the network. Both round-trip exactly; malformed input is an error, never a throw.
#include <nlohmann/json_fwd.hpp>

#include "binding/fabric/network_choice.h"
#include "tlaunch/fabric.h"
#include "tlaunch/result.h"

namespace tlaunch {

nlohmann::json fabricToJson(const NodeFabric& fabric);
// Rejects missing or mistyped fields with Errc::protocol naming what is wrong.
Result<NodeFabric> fabricFromJson(const nlohmann::json& j);

nlohmann::json networkChoiceToJson(const NetworkChoice& choice);
Result<NetworkChoice> networkChoiceFromJson(const nlohmann::json& j);

}  // namespace tlaunch
