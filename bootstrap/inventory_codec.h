#pragma once
// The inventory's wire form: a map with the topology, fabric and preflight parts in their own
// JSON/CBOR codecs (binding/*). Decoding checks every field: a malformed part is an error that
// names it, never a crash or a silently missing node property.
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "bootstrap/message.h"
#include "tlaunch/inventory.h"
#include "tlaunch/result.h"

namespace tlaunch {

// The topology travels as one CBOR byte string ("topology_cbor"): the frontend's message decode
// then makes one value of it, not thousands, and identical machines' topologies (most of a
// cluster) are parsed once (TopologyDecodeCache). "topology" as a map is read too.
Json inventoryToJson(const NodeInventory& inventory);

// Each distinct encoded topology parsed once; at most kMaxEntries kept (a cluster has few kinds
// of machine; beyond that, decoding just is not cached).
class TopologyDecodeCache {
 public:
  static constexpr size_t kMaxEntries = 64;
  // Identical topologies (the same machine model) decode to one shared snapshot.
  Result<std::shared_ptr<const TopologySnapshot>> decode(std::string_view cbor);
  size_t parsed() const { return parsed_; }

 private:
  std::unordered_map<std::string, std::shared_ptr<const TopologySnapshot>> seen_;
  size_t parsed_ = 0;
};

Result<NodeInventory> inventoryFromJson(const Json& j, TopologyDecodeCache* cache = nullptr);

}  // namespace tlaunch
