#include "daemon/subtree_fence.h"

#include "bootstrap/frame_codec.h"
#include "bootstrap/tree_shape.h"

namespace tlaunch {

namespace {
// A share's [node, data] parts: a subtree's as they came, one node's as its own.
void appendParts(const Json& share, int node, Json& parts) {
  if (auto it = share.find("parts"); it != share.end() && it->is_array()) {
    for (const auto& p : *it) parts.push_back(p);
  } else {
    parts.push_back(Json::array({node, share.contains("d") ? share["d"] : binary("")}));
  }
}
size_t binarySize(const Json& v) { return v.is_binary() ? v.get_binary().size() : 0; }
}  // namespace

Json fenceThatFits(Json fence) {
  if (fence.contains("too_big")) return fence;
  size_t bytes = 0;
  if (auto it = fence.find("parts"); it != fence.end() && it->is_array()) {
    for (const auto& p : *it)
      if (p.is_array() && p.size() == 2) bytes += binarySize(p[1]);
  } else if (auto d = fence.find("d"); d != fence.end()) {
    bytes = binarySize(*d);
  }
  if (bytes <= kMaxCollectedBytes) return fence;
  return Json{{"t", "fence"}, {"seq", fence.value("seq", Json(0))}, {"collect", fence.value("collect", Json(true))},
              {"too_big", bytes}};
}

std::optional<Json> SubtreeFence::add(const Json& msg, int node, std::size_t expected) {
  const auto seq = static_cast<uint64_t>(getInt(msg, "seq"));
  if (pass_all_) return passOn(seq, msg, node);  // the frontend answers each share: none is late
  if (ended_.count(seq)) return std::nullopt;
  if (passing_.count(seq) || getBool(msg, "passed") ||
      (!fences_.count(seq) && fences_.size() >= kMaxInProgress)) {
    // No room to gather (a child opened fences without end), or a share a daemon below passed on
    // already: the share goes up as it is, and so does every later share of this fence; the
    // frontend assembles them just the same and bounds what it holds. Dropped, the job's real
    // fence would have waited for ever.
    return passOn(seq, msg, node);
  }
  Gathering& g = fences_[seq];
  if (!g.from.insert(node).second) return std::nullopt;  // this contributor's share is in already
  g.collect = g.collect || getBool(msg, "collect");
  appendParts(msg, node, g.parts);
  if (g.from.size() < expected) return std::nullopt;
  Json combined = {{"t", "fence"}, {"seq", seq}, {"collect", g.collect}, {"parts", std::move(g.parts)}};
  ended(seq);
  return combined;
}

// One share on its way up alone, with whatever this daemon had gathered of the same fence.
Json SubtreeFence::passOn(uint64_t seq, const Json& msg, int node) {
  passing_.insert(seq);
  if (passing_.size() > kRememberEnded) passing_.erase(passing_.begin());
  Json parts = Json::array();
  bool collect = getBool(msg, "collect");
  if (auto it = fences_.find(seq); it != fences_.end()) {
    parts = std::move(it->second.parts);
    collect = collect || it->second.collect;
    fences_.erase(it);
  }
  appendParts(msg, node, parts);
  return Json{{"t", "fence"}, {"seq", seq}, {"collect", collect}, {"passed", true}, {"parts", std::move(parts)}};
}

std::vector<Json> SubtreeFence::passAll() {
  pass_all_ = true;
  std::vector<Json> up;
  for (auto& [seq, g] : fences_) {
    passing_.insert(seq);
    up.push_back(Json{{"t", "fence"}, {"seq", seq}, {"collect", g.collect}, {"passed", true}, {"parts", std::move(g.parts)}});
  }
  fences_.clear();
  while (passing_.size() > kRememberEnded) passing_.erase(passing_.begin());
  return up;
}

void SubtreeFence::forget(uint64_t seq) { ended(seq); }

void SubtreeFence::ended(uint64_t seq) {
  fences_.erase(seq);
  ended_.insert(seq);
  if (ended_.size() > kRememberEnded) ended_.erase(ended_.begin());
}

std::optional<Json> SubtreeFence::addRelayed(Json msg, std::size_t expected) {
  const int child = static_cast<int>(getInt(msg, kSourceTag, -1));
  msg.erase(kSourceTag);  // the combined message is this daemon's own: its parent tags it
  return add(msg, child, expected);
}

}  // namespace tlaunch
