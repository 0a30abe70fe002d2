#include "daemon/subtree_fence.h"

#include "bootstrap/tree_shape.h"

namespace tlaunch {

std::optional<Json> SubtreeFence::add(const Json& msg, int node, std::size_t expected) {
  const auto seq = static_cast<uint64_t>(getInt(msg, "seq"));
  Gathering& g = fences_[seq];
  g.collect = g.collect || getBool(msg, "collect");
  if (auto it = msg.find("parts"); it != msg.end() && it->is_array()) {
    for (const auto& p : *it) g.parts.push_back(p);
  } else {
    g.parts.push_back(Json::array({node, msg.contains("d") ? msg["d"] : binary("")}));
  }
  if (++g.arrived < expected) return std::nullopt;
  Json combined = {{"t", "fence"}, {"seq", seq}, {"collect", g.collect}, {"parts", std::move(g.parts)}};
  fences_.erase(seq);
  return combined;
}

std::optional<Json> SubtreeFence::addRelayed(Json msg, std::size_t expected) {
  const int child = static_cast<int>(getInt(msg, kSourceTag, -1));
  msg.erase(kSourceTag);  // the combined message is this daemon's own: its parent tags it
  return add(msg, child, expected);
}

}  // namespace tlaunch
