#pragma once
// What JobSession's parts (launcher/job_session*.cc) share of one daemon's link and of a
// connection not yet authenticated. Private to the session: include only from its files.
#include <chrono>
#include <memory>
#include <string>

#include "bootstrap/connection.h"
#include "launcher/job_session.h"
#include "tlaunch/inventory.h"

namespace tlaunch {

using Clock = std::chrono::steady_clock;  // the session's deadlines and timings

struct JobSession::Link {
  int index = 0;
  std::string name;
  std::shared_ptr<Connection> conn;
  NodeInventory inventory;
  bool has_inventory = false;
  bool prepared = false;
  bool started = false;
  bool all_exited = false;
  bool drained = false;
  bool closed = false;
  bool routed = false;  // attached to its tree parent: conn is null, messages go through the parent
  bool started_by_frontend = false;  // tree spawn: tlaunch's own host, or its parent could not ssh to it
  // Its parent reported it lost before its own "attached" (on its direct connection) was read:
  // once that arrives, the node is lost, not attached.
  std::string lost_by_parent;
  std::string control_ip;
  // How its daemon's process (or ssh session) ended after it connected, as its starter saw it:
  // the why of the node's loss, if its connection closes.
  std::string process_end;
  std::chrono::steady_clock::time_point process_end_at;
  // Its connection closed after all its ranks had ended (not a loss): said, and whether the
  // starter's words on the daemon's end were said too.
  bool end_noted = false;
  bool end_words_noted = false;
  std::chrono::steady_clock::time_point last_heard;
  std::chrono::steady_clock::time_point reported_at, prepared_at, started_at;  // for --verbose's phase timings
};

struct JobSession::Pending {
  uint64_t id = 0;  // never reused: a removal posted for one cannot hit a newer one at its address
  std::shared_ptr<Connection> conn;
  std::string nonce;
  std::chrono::steady_clock::time_point since;
};

}  // namespace tlaunch
