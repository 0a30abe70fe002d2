#pragma once
// While a daemon switches to its tree parent (daemon_session_tree.cc), a broadcast of the
// frontend can come twice: on the direct connection the frontend has not closed yet, and through
// the parent. It is handled and passed on once: passed on twice, a child would take the second
// for a replay and drop the link. tlaunchd and the scale harness's simulated daemons both use it.
#include <cstdint>
#include <memory>

#include "bootstrap/connection.h"

namespace tlaunch {

class UpstreamBroadcasts {
 public:
  // The connection delivering the broadcast being handled: the upstream one, or the direct one
  // still being read while attaching; nullptr while the message handled is no broadcast.
  static const Connection* delivering(const std::shared_ptr<Connection>& upstream,
                                      const std::shared_ptr<Connection>& leaving) {
    if (upstream && upstream->deliveringBroadcastNumber() != 0) return upstream.get();
    if (leaving && leaving->deliveringBroadcastNumber() != 0) return leaving.get();
    return nullptr;
  }
  // False for a broadcast handled already (numbers come in order on every link).
  bool firstTime(const Connection& from) {
    if (from.deliveringBroadcastNumber() <= last_) return false;
    last_ = from.deliveringBroadcastNumber();
    return true;
  }

 private:
  uint64_t last_ = 0;  // the newest broadcast handled
};

}  // namespace tlaunch
