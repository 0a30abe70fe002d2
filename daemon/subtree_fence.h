#pragma once
// An interior daemon's share of a fence of the whole job (pure): its own contribution and one
// from each child below it (each already that child's whole subtree) leave as one message, so
// the frontend reads one contribution per direct child instead of one per node. The parts keep
// their node numbers; the frontend still assembles the result in node order
// (bootstrap/fence_collector.h) and sends it down once per link.
//
// A contribution is a "fence" message: {"seq", "collect", "d"} from one node, or
// {"seq", "collect", "parts": [[node, data], ...]} from a subtree. Each contributor counts once
// per fence, and a fence that ended (completed or forgotten) takes no more contributions: a
// second or late one from a confused or hostile child neither completes a fence early nor
// leaves a gathering behind that never completes. With no room to gather (256 open: a child
// that opens fences without end), shares go up one by one instead of being dropped, marked
// "passed" so that the daemons above pass them on too (counted by contributor there, the second
// share of a child would be taken for a repeat). Once a rank of the job has failed, no fence of
// the whole job can complete: every share then goes up at once (passAll), and the frontend
// answers each node "lost" — a gathering would wait for ever for a node whose ranks are gone.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "bootstrap/message.h"

namespace tlaunch {

// A fence share (one node's "d", or a subtree's "parts") whose data would not fit in one
// control-plane frame (kMaxCollectedBytes) becomes {"seq", "collect", "too_big": bytes}: sent as
// it was, the frame would be refused above and this node taken for lost (and dropped by a
// restart), where the frontend can say what happened. Others come back unchanged.
Json fenceThatFits(Json fence);

class SubtreeFence {
 public:
  // `msg` came from `node` (this daemon's own, or a child's); `expected`: contributions this
  // daemon waits for (itself and each child). The combined message once the last is in.
  std::optional<Json> add(const Json& msg, int node, std::size_t expected);
  // A child's share as TreeChildren relays it (tagged with the child's number).
  std::optional<Json> addRelayed(Json msg, std::size_t expected);
  // The fence ended without us (a failed rank): forget what was gathered.
  void forget(uint64_t seq);
  // A rank of the job failed: from now on every share goes up as it comes, and what is gathered
  // so far goes up now (one message per fence in progress).
  std::vector<Json> passAll();
  std::size_t inProgress() const { return fences_.size(); }

 private:
  struct Gathering {
    Json parts = Json::array();
    std::set<int> from;  // contributors so far: this node, its children
    bool collect = false;
  };
  void ended(uint64_t seq);
  Json passOn(uint64_t seq, const Json& msg, int node);
  static constexpr std::size_t kRememberEnded = 256;  // fences end in order: the last few suffice
  static constexpr std::size_t kMaxInProgress = 256;  // normally one or two at a time
  std::map<uint64_t, Gathering> fences_;
  std::set<uint64_t> ended_;
  std::set<uint64_t> passing_;  // fences whose shares go up one by one (no room to gather them)
  bool pass_all_ = false;       // a rank of the job failed: no fence is gathered any more
};

}  // namespace tlaunch
