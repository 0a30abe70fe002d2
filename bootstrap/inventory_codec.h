#pragma once
// The inventory's wire form: a map with the topology, fabric and preflight parts in their own
// JSON/CBOR codecs (binding/*). Decoding checks every field: a malformed part is an error that
// names it, never a crash or a silently missing node property.
#include "bootstrap/message.h"
#include "tlaunch/inventory.h"
#include "tlaunch/result.h"

namespace tlaunch {

Json inventoryToJson(const NodeInventory& inventory);
Result<NodeInventory> inventoryFromJson(const Json& j);

}  // namespace tlaunch
