// The control tree at the frontend (bootstrap/tree_shape.h, --tree-radix). Every daemon first
// proves itself here and reports its inventory; then, when the job has more nodes than the
// radix, each node below the frontend's own children is told its parent and attaches to it
// (daemon/daemon_session_tree.cc), and the frontend closes its direct connection. From then on
// a message for a node goes down its parents ("@dst"), a broadcast goes once to each direct
// child ("@all"), and a node's messages come up tagged with their origin ("@src").
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"

#include "tlaunch/diagnostics.h"
#include "tlaunch/strings.h"

namespace tlaunch {

bool JobSession::wireTree() {
  const int n = static_cast<int>(links_.size());
  const int k = cfg_.spec.tree_radix;
  if (tree_) return false;  // spawned as a tree: every node is in its place already
  if (k <= 0 || n <= k || cfg_.spec.dry_run || cfg_.spec.preflight_only) return false;
  tree_ = TreeShape{n, k};
  tree_waiting_ = 0;
  for (int i = 0; i < n; ++i) {
    Json m = treeMessage(i);
    if (const int p = tree_->parentOf(i); p >= 0) {
      const Link& parent = *links_[static_cast<size_t>(p)];
      m["parent"] = {{"name", parent.name}, {"host", parent.control_ip}, {"port", parent.inventory.probe_port}};
      ++tree_waiting_;
    }
    links_[static_cast<size_t>(i)]->conn->send(m);
  }
  tree_started_at_ = Clock::now();
  phase_deadline_ = tree_started_at_ + kTreeWiringTimeout;
  return true;
}

void JobSession::onAttached(Link& link, bool attached, const std::string& reason) {
  // Not asked to (a node the frontend keeps as its own child), or answered already: a stray
  // "attached" must not cut the node's only link and lose it and its subtree without a word.
  if (!tree_ || tree_waiting_ <= 0 || !link.conn || link.routed || tree_->parentOf(link.index) < 0) return;
  if (attached) {
    link.routed = true;
    auto direct = std::move(link.conn);
    // What is still queued leaves, then the connection closes; nothing it reads or how it ends
    // concerns the job any more (the node is not lost).
    direct->setHandlers([](Json&&) {}, [](const std::string&) {});
    direct->setOutputHandler([](const OutputRecord&, OwnedBytes&&) {});
    direct->closeAfterFlush();
    // Its parent was lost before this was read: it went down with it (its link is gone).
    const Link& parent = *links_[static_cast<size_t>(tree_->parentOf(link.index))];
    if (link.lost_by_parent.empty() && parent.closed) link.lost_by_parent = "its tree parent " + parent.name + " was lost";
    if (!link.lost_by_parent.empty()) {  // its parent lost it already: so has the job
      --tree_waiting_;
      onLinkClosed(link, link.lost_by_parent);
      return;
    }
  } else {
    // It stays connected here, and still carries its own children (they attach to it).
    const int p = tree_->parentOf(link.index);
    out_.note("node " + link.name + " could not attach to its parent " + nodeLabel(p) + " in the control tree (" +
              reason + "); it stays connected to tlaunch directly");
  }
  if (--tree_waiting_ > 0) return;
  noteTreeShape("in place after " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - tree_started_at_).count()) +
                " ms");
  checkAcrossNodes();
}

Json JobSession::treeMessage(int index) const {
  Json names = Json::object();
  for (int c : tree_->childrenOf(index)) names[std::to_string(c)] = links_[static_cast<size_t>(c)]->name;
  return {{"t", "tree"}, {"index", index}, {"nodes", tree_->nodes}, {"radix", tree_->fanout}, {"children", std::move(names)}};
}

void JobSession::noteTreeShape(const std::string& how) {
  if (!cfg_.spec.verbose) return;
  const auto direct = std::count_if(links_.begin(), links_.end(), [](const auto& l) { return !l->routed; });
  out_.note("control tree: tlaunch talks to " + std::to_string(direct) + " of " + std::to_string(links_.size()) +
            " daemons (radix " + std::to_string(tree_->fanout) + ", depth " + std::to_string(tree_->depth()) + "); " +
            how);
}

int JobSession::routeOf(int node) const {
  if (node < 0 || node >= static_cast<int>(links_.size())) return -1;
  int a = node;
  while (a >= 0 && links_[static_cast<size_t>(a)]->routed) a = tree_->parentOf(a);
  return a;
}

bool JobSession::carriedBy(int node, int via) const {
  if (node < 0 || node >= static_cast<int>(links_.size())) return false;
  int a = node;
  while (a != via && a >= 0 && links_[static_cast<size_t>(a)]->routed) a = tree_->parentOf(a);
  return a == via;
}

Connection* JobSession::openRouteTo(int node) const {
  const int via = routeOf(node);
  if (via < 0 || links_[static_cast<size_t>(node)]->closed) return nullptr;
  const auto& conn = links_[static_cast<size_t>(via)]->conn;
  return conn && conn->isOpen() ? conn.get() : nullptr;
}

bool JobSession::reachable(int node) const { return openRouteTo(node) != nullptr; }

std::vector<int> JobSession::routedBelow(int node) const {
  std::vector<int> out;
  if (!tree_) return out;
  const bool spawned = spawnsTree();
  for (int n = 0; n < static_cast<int>(links_.size()); ++n) {
    if (n == node || links_[static_cast<size_t>(n)]->closed) continue;
    // Up from n while each step depends on its parent: a routed node reaches tlaunch through
    // it; under tree spawn, a node not yet joined was (or was to be) started by it over ssh and
    // connects to it, so it goes down with it too. A node with a connection of its own, or one
    // tlaunch started itself, does not.
    int a = n;
    while (a >= 0 && a != node) {
      const Link& l = *links_[static_cast<size_t>(a)];
      const bool pending = spawned && !l.conn && !l.routed && !l.started_by_frontend;
      if (!l.routed && !pending) break;
      a = tree_->parentOf(a);
    }
    if (a == node) out.push_back(n);
  }
  return out;
}

void JobSession::sendToNode(int node, Json msg) { sendRouted(node, std::move(msg), false); }

void JobSession::sendRouted(int node, Json msg, bool bulk) {
  Connection* conn = openRouteTo(node);
  if (!conn) return;
  if (conn != links_[static_cast<size_t>(node)]->conn.get()) msg[kDestinationTag] = node;
  conn->send(msg, bulk);
}

void JobSession::onLinkMessage(Link& link, Json&& msg) {
  const auto now = Clock::now();
  link.last_heard = now;
  auto it = msg.find(kSourceTag);
  if (it == msg.end()) {
    // A type this frontend does not know (a newer daemon's report) is not worth ending a job for.
    (void)router_.route(std::move(msg), link);
    return;
  }
  // From a node below this one: it must be routed through it, or be about to be (its parent
  // passes its messages on as soon as it attached; its "attached", on its own connection to
  // us, may not have been read yet).
  const int source = it->is_number_integer() ? it->get<int>() : -1;
  // Only while the tree is being wired: a node that could not attach, or one tlaunch started
  // itself, is never spoken for by a daemon above it. Meanwhile a node may be routed already
  // while a node between it and this one is not yet (its "attached" still unread): its route
  // then ends at that node, below this one.
  const bool attaching = tree_ && tree_waiting_ > 0 && source >= 0 && source < static_cast<int>(links_.size()) &&
                         !links_[static_cast<size_t>(source)]->closed &&
                         (links_[static_cast<size_t>(source)]->conn || links_[static_cast<size_t>(source)]->routed) &&
                         tree_->isInSubtree(source, link.index);
  if (source == link.index || (routeOf(source) != link.index && !attaching)) {
    noteAnomaly("node " + link.name + " relayed a message from node " + std::to_string(source) +
                ", which is not below it in the control tree; dropped");
    return;
  }
  Link& origin = *links_[static_cast<size_t>(source)];
  origin.last_heard = now;
  (void)router_.route(std::move(msg), origin);
}

int JobSession::outputSource(const Link& link, int rank) {
  const int node = nodeOfRank(rank);
  if (node == link.index) return node;
  if (!tree_) return -1;  // a rank that does not run there
  if (node < 0 || routeOf(node) != link.index) return -1;
  links_[static_cast<size_t>(node)]->last_heard = Clock::now();
  return node;
}

JobSession::Link* JobSession::childNamedIn(const Link& parent, const Json& msg) {
  const auto node = getInt(msg, "node", -1);
  if (!tree_ || node < 0 || node >= static_cast<long long>(links_.size()) ||
      tree_->parentOf(static_cast<int>(node)) != parent.index)
    return nullptr;
  return links_[static_cast<size_t>(node)].get();
}

void JobSession::onChildLost(Link& parent, const Json& msg) {
  Link* found = childNamedIn(parent, msg);
  if (!found) return;
  Link& child = *found;
  const std::string reason = getString(msg, "reason", "its parent lost it");
  if (child.routed && !child.closed) {
    // As for a direct child that went silent: a stopped daemon would hold its starter's stop
    // for the whole grace (SIGTERM waits for SIGCONT); the starter ends it at once.
    starter_->daemonLost(child.index);
    if (fallback_starter_) fallback_starter_->daemonLost(child.index);
    onLinkClosed(child, reason);
  }
  // Lost by its parent before we read its "attached": onAttached ends it then.
  else if (!child.routed && !child.closed && child.conn && tree_waiting_ > 0) child.lost_by_parent = reason;
}

std::vector<std::string> JobSession::closeRoutedBelow(const Link& link) {
  // The nodes below it in the tree reached tlaunch through it: they end their ranks, and the
  // job cannot go on without them either.
  std::vector<std::string> below;
  for (int n : routedBelow(link.index)) {
    auto& l = *links_[static_cast<size_t>(n)];
    l.closed = true;
    below.push_back(l.name);
  }
  return below;
}

std::string JobSession::lostNodeText(const Link& link, const LostNode& lost) const {
  const std::string& reason = lost.reason;
  const std::vector<std::string>& below = lost.below;
  // Its starter saw how the daemon ended: that replaces the guess. Its first line goes into
  // the sentence; the daemon's (or ssh's) last words, on the lines after, end the message.
  // An end seen long before the close (an ssh client killed while its daemon went on) is
  // not why the connection closed now.
  const bool ended_now = !link.process_end.empty() && link.process_end_at + std::chrono::seconds(5) >= lost.at;
  const std::string end = ended_now ? link.process_end : "";
  const size_t eol = end.find('\n');
  const std::string ended = end.substr(0, eol);
  const std::string said = eol == std::string::npos ? "" : end.substr(eol);
  const std::string count = std::to_string(below.size()) + (below.size() == 1 ? " node" : " nodes");
  const std::string their = below.size() == 1 ? "its" : "their";
  if (below.empty() && ended.empty())
    return diagnosticError(Errc::node_lost, "node-lost", {{"node", link.name}, {"reason", reason}}).message;
  if (below.empty())
    return diagnosticError(Errc::node_lost, "node-lost-ended", {{"node", link.name}, {"reason", reason}, {"ended", ended}})
               .message +
           said;
  if (ended.empty())
    return diagnosticError(Errc::node_lost, "node-lost-subtree",
                           {{"node", link.name}, {"reason", reason}, {"count", count}, {"their", their}, {"nodes", joinSome(below)}})
        .message;
  return diagnosticError(
             Errc::node_lost, "node-lost-subtree-ended",
             {{"node", link.name}, {"reason", reason}, {"ended", ended}, {"count", count}, {"their", their}, {"nodes", joinSome(below)}})
             .message +
         said;
}

}  // namespace tlaunch
