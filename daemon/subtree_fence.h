#pragma once
// An interior daemon's share of a fence of the whole job (pure): its own contribution and one
// from each child below it (each already that child's whole subtree) leave as one message, so
// the frontend reads one contribution per direct child instead of one per node. The parts keep
// their node numbers; the frontend still assembles the result in node order
// (bootstrap/fence_collector.h) and sends it down once per link.
//
// A contribution is a "fence" message: {"seq", "collect", "d"} from one node, or
// {"seq", "collect", "parts": [[node, data], ...]} from a subtree.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

#include "bootstrap/message.h"

namespace tlaunch {

class SubtreeFence {
 public:
  // `msg` came from `node` (this daemon's own, or a child's); `expected`: contributions this
  // daemon waits for (itself and each child). The combined message once the last is in.
  std::optional<Json> add(const Json& msg, int node, std::size_t expected);
  // A child's share as TreeChildren relays it (tagged with the child's number).
  std::optional<Json> addRelayed(Json msg, std::size_t expected);
  // The fence ended without us (a failed rank): forget what was gathered.
  void forget(uint64_t seq) { fences_.erase(seq); }
  std::size_t inProgress() const { return fences_.size(); }

 private:
  struct Gathering {
    Json parts = Json::array();
    std::size_t arrived = 0;
    bool collect = false;
  };
  std::map<uint64_t, Gathering> fences_;
};

}  // namespace tlaunch
