// Tree spawn: the frontend's "tree" message may carry the children this node starts itself,
// over ssh with the user's ssh options, as the frontend starts its own (launcher/ssh_starter.h;
// the job secret goes over ssh's stdin). They connect to this node's listener and prove the
// secret here (TreeChildren); "child_joined" tells the frontend, which configures them through
// this node. A child whose ssh fails is reported ("spawn_failed"): the frontend starts it.
#include <spdlog/spdlog.h>

#include "daemon/daemon_session.h"
#include "daemon/tree_children.h"
#include "launcher/ssh_starter.h"

namespace tlaunch {

void DaemonSession::spawnChildren(const Json& spawn) {
  if (spawner_) return;  // once per job
  std::vector<NodeTarget> targets;
  if (auto it = spawn.find("targets"); it != spawn.end() && it->is_array())
    for (const auto& t : *it)
      targets.push_back({static_cast<int>(getInt(t, "index", -1)), getString(t, "name"), getString(t, "host"), {}});
  auto report = [this](int node, const std::string& why) {
    sendUp({{"t", "spawn_failed"}, {"node", node}, {"message", why}}, false);
  };
  asio::error_code ec;
  const auto listener = probe_acceptor_.local_endpoint(ec);
  std::string host = getString(spawn, "host");
  if (ec || host.empty()) {
    for (const auto& t : targets) report(t.index, "this node has no listener for its children");
    return;
  }
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  SshStarterOptions o;
  o.connect_timeout_s = static_cast<int>(getInt(spawn, "connect_timeout_s", o.connect_timeout_s));
  o.fanout = static_cast<int>(getInt(spawn, "fanout", o.fanout));
  o.reuse_connections = getBool(spawn, "reuse", false);
  if (auto it = spawn.find("ssh_options"); it != spawn.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_string()) o.ssh_options.push_back(v.get<std::string>());
  DaemonCommand cmd;
  cmd.daemon_path = getString(spawn, "daemon_path");
  cmd.args = {"--connect", host + ":" + std::to_string(listener.port()), "--job-id", getString(spawn, "job_id"),
              "--tree-parent", opts_.node_name,
              // tlaunch's, as this daemon got it: past it the frontend has given the child up
              "--connect-timeout", std::to_string(opts_.connect_timeout.count()),
              // ours, from the job's config: the child watches our heartbeats before its own config
              "--tree-parent-timeout-ms", std::to_string(dead_peer_timeout_.count())};
  auto starter = std::make_unique<SshStarter>(std::move(o));
  if (auto r = starter->start(targets, cmd, opts_.secret); !r) {
    for (const auto& t : targets) report(t.index, r.error().message);
    return;
  }
  spdlog::debug("starting the daemons of {} tree children over ssh", targets.size());
  spawner_ = std::move(starter);
}

void DaemonSession::pollSpawned() {
  if (!spawner_) return;
  for (const auto& f : spawner_->poll()) {
    if (f.node_index < 0) continue;
    sendUp({{"t", "spawn_failed"}, {"node", f.node_index}, {"message", f.message}, {"unreachable", f.unreachable}},
           false);
  }
}

}  // namespace tlaunch
