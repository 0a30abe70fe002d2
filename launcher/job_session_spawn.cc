// Tree spawn over ssh (--tree-radix, the ssh launcher): the frontend starts the daemons of its
// own children only; each daemon, once placed, starts its children's daemons over ssh itself,
// pointing them at its own listener (daemon/daemon_session_spawn.cc). A child proves the secret
// to its parent, the parent says "child_joined", and the frontend sends the child its
// configuration down the tree; the child's inventory comes up it. A node whose parent cannot
// start it (no ssh from node to node, a refused key) is started by the frontend instead and
// connects to it directly, said with -v.
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"

#include "launcher/ssh_starter.h"

namespace tlaunch {

bool JobSession::spawnsTree() const {
  const int k = cfg_.spec.tree_radix;
  return cfg_.tree_spawn && k > 0 && static_cast<int>(links_.size()) > k && cfg_.unnamed_nodes == 0 &&
         cfg_.starter_nodes.empty();
}

std::vector<NodeTarget> JobSession::nodesToStart() const {
  if (!tree_) return cfg_.starter_nodes.empty() ? cfg_.nodes : cfg_.starter_nodes;
  std::vector<NodeTarget> direct;
  for (const auto& n : cfg_.nodes)
    if (tree_->parentOf(n.index) < 0 || links_[static_cast<size_t>(n.index)]->started_by_frontend) direct.push_back(n);
  return direct;
}

DaemonCommand JobSession::daemonCommand() const {
  DaemonCommand cmd;
  cmd.daemon_path = cfg_.daemon_path;
  const auto port = cfg_.in_memory ? 0 : acceptor_.local_endpoint().port();
  const std::string& advertised = cfg_.connectAddress();
  const std::string host = advertised.find(':') != std::string::npos ? "[" + advertised + "]" : advertised;
  cmd.args = {"--connect", host + ":" + std::to_string(port), "--job-id", cfg_.plan_context.job_id,
              "--connect-timeout", std::to_string(cfg_.spec.connect_timeout_s)};
  return cmd;
}

void JobSession::placeInTree(Link& link) {
  Json targets = Json::array();
  for (int c : tree_->childrenOf(link.index)) {
    const NodeTarget& n = cfg_.nodes[static_cast<size_t>(c)];
    // Started by the frontend (tlaunch's own host, or its parent could not): the parent only
    // expects it; it connects here and is placed in turn.
    const Link& child = *links_[static_cast<size_t>(c)];
    if (child.conn || child.started_by_frontend) continue;
    targets.push_back({{"index", n.index}, {"name", n.name}, {"host", n.host}});
  }
  Json m = treeMessage(link.index);
  if (!targets.empty()) {
    const auto& o = *cfg_.tree_spawn;
    m["spawn"] = {{"targets", std::move(targets)},
                  {"daemon_path", cfg_.daemon_path},
                  {"job_id", cfg_.plan_context.job_id},
                  {"host", link.control_ip},  // where the children reach this node: as tlaunch does
                  {"ssh_options", o.ssh_options},
                  {"connect_timeout_s", o.connect_timeout_s},
                  {"fanout", o.fanout},
                  // No ControlPersist master left behind on a compute node after the job.
                  {"reuse", false}};
  }
  sendToNode(link.index, std::move(m));
}

void JobSession::onChildJoined(Link& parent, const Json& msg) {
  Link* found = childNamedIn(parent, msg);
  if (!found) return;
  Link& child = *found;
  if (child.conn || child.routed) return;  // started by the frontend after all, or joined already
  child.routed = true;
  child.last_heard = Clock::now();
  child.control_ip = getString(msg, "ip");
  sendToNode(child.index, {{"t", "config"}, {"config", daemonConfigFor(child)}});
  placeInTree(child);
}

void JobSession::onSpawnFailed(Link& parent, const Json& msg) {
  Link* found = childNamedIn(parent, msg);
  if (!found) return;
  Link& child = *found;
  // A repeated report (the parent retried, or a daemon gone wrong) must not start a second daemon.
  if (child.conn || child.routed || child.started_by_frontend || failed_) return;
  child.started_by_frontend = true;  // by tlaunch now, or by nobody
  const std::string why = getString(msg, "message");
  // Its parent's ssh found it down (no route, sshd refused): tlaunch's own would get the same
  // answer. A failure of its own, as if tlaunch had tried. A time-out is tried again from here.
  if (getBool(msg, "unreachable")) {
    const size_t eol = std::min(why.find('\n'), why.size());
    StartFailure f{child.index, why.substr(0, eol) + " (from node " + parent.name + ", its parent in the control tree)" +
                                    why.substr(eol)};
    f.unreachable = true;
    onStartFailures({f}, Clock::now());
    return;
  }
  if (cfg_.spec.verbose)
    out_.note("node " + parent.name + " could not start tlaunchd on " + child.name + " over ssh (" + why +
              "); tlaunch starts it and talks to it directly");
  const std::vector<NodeTarget> node{cfg_.nodes[static_cast<size_t>(child.index)]};
  Result<void> started;
  if (fallback_starter_) {
    started = fallback_starter_->add(node);
  } else {
    fallback_starter_ = std::make_unique<SshStarter>(*cfg_.tree_spawn);
    started = fallback_starter_->start(node, daemonCommand(), cfg_.secret);
  }
  if (!started)
    fail(exitStatusFor(started.error().code),
         "could not start tlaunchd on node " + child.name + ": " + started.error().message, -1, {}, child.name);
}

}  // namespace tlaunch
