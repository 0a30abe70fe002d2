#pragma once
// An interior daemon's side of the control tree (bootstrap/tree_shape.h). Its children connect
// to the node's listener and prove the job secret exactly as daemons do to the frontend (a
// challenge, the hello's proof, the welcome's, sealed frames after); this daemon then carries
// the frontend's messages down to the subtree they are addressed to, and its subtree's
// messages and rank output up, each tagged with the node it came from. A child that goes
// silent or away is reported up as lost: the frontend decides what that ends.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <asio.hpp>

#include "bootstrap/connection.h"
#include "bootstrap/tree_shape.h"

namespace tlaunch {

// Where a message from the subtree travels in this daemon's upstream connection: the ones that
// must stay behind the rank output before them (exits, the end of the ranks) go with the output,
// and so does a child's loss, which must not pass that child's last exits on their way up.
bool travelsBehindOutput(const std::string& type);
// Downstream, the frontend's stdin data goes in the bulk queue (control frames pass it).
bool travelsAsBulkDown(const std::string& type);

class TreeChildren {
 public:
  struct Hooks {
    std::function<void(Json&& msg, bool bulk)> up;                     // a message of the subtree
    std::function<void(Connection::Frame frame)> up_output;            // a rank output record
    std::function<void(int node, const std::string& reason)> lost;     // a child went away
    std::function<void(int node, const std::string& ip)> joined;      // a child proved itself here
  };
  TreeChildren(asio::io_context& io, std::string secret, Hooks hooks);
  ~TreeChildren();

  // A connection on the node's listener: a child, or a reachability probe (which just closes).
  void adopt(asio::ip::tcp::socket socket);
  // This node's place in the tree, from the frontend: children connecting before it are held.
  void place(int self, TreeShape shape, std::map<int, std::string> children);
  void setDeadPeerTimeout(std::chrono::milliseconds timeout) { dead_peer_ = timeout; }

  // Down: to the child whose subtree holds `node` (false when none of ours does), or to all.
  bool sendToward(int node, const Connection::Frame& frame, bool bulk);
  void sendAll(const Connection::Frame& frame, bool bulk);
  void sendAll(const Connection::BroadcastFrame& broadcast, bool bulk);  // as it came, behind an envelope each
  // This daemon's heartbeat to its children: they end their ranks when it stops (a parent that
  // is frozen keeps their connections open, and the frontend's messages no longer reach them).
  void pingAll();

  // Children silent for longer than `timeout` are closed and reported lost; strangers that
  // have not proved the secret within kAuthTimeout are dropped.
  void checkLiveness(std::chrono::milliseconds timeout);
  // The job is ending: a child that closes now has finished, it is not lost.
  void expectEnd() { ending_ = true; }
  size_t openChildren() const;
  size_t heldForPlace() const;  // proved the secret, waiting for place()
  void closeAll();
  // Connections waiting for their proof or our place; beyond it a stranger goes
  // (bootstrap/stranger_eviction.h).
  static constexpr size_t kMaxUnplaced = 256;

 private:
  struct Child;
  void onHello(Child& c, Json&& msg);
  void accepted(Child& c);  // proved the secret and belongs here: a child from now on
  void onChildMessage(Child& c, Json&& msg);
  void drop(uint64_t id);
  // A subtree's fence share names only nodes of that subtree (one cannot speak for a sibling).
  bool partsFromSubtree(const Json& fence, int child) const;
  Child* childAt(int index);

  static constexpr auto kAuthTimeout = std::chrono::seconds(5);

  asio::io_context& io_;
  std::string secret_;
  Hooks hooks_;
  std::vector<std::unique_ptr<Child>> children_;
  bool placed_ = false;
  int self_ = -1;
  TreeShape shape_{};
  std::map<int, std::string> expected_;  // index -> node name, once placed
  std::chrono::milliseconds dead_peer_{15000};
  bool ending_ = false;
  uint64_t next_id_ = 1;
};

}  // namespace tlaunch
