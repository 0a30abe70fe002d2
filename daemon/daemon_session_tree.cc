// tlaunchd in the control tree (bootstrap/tree_shape.h): the frontend's "tree" message gives
// this node its index, its children and, below the frontend's own children, the parent to
// attach to. Attaching is the frontend's handshake again, with the parent in the frontend's
// place; once the parent has welcomed us, the frontend is told so on the direct connection,
// which it then closes, and everything goes through the parent.
#include <spdlog/spdlog.h>

#include "bootstrap/auth.h"
#include "daemon/daemon_session.h"
#include "daemon/tree_children.h"
#include "tlaunch/version.h"

namespace tlaunch {

void DaemonSession::startTreeListener() {
  TreeChildren::Hooks hooks;
  hooks.up = [this](Json&& m, bool bulk) { sendUp(std::move(m), bulk); };
  hooks.up_output = [this](Connection::Frame f) {
    if (conn_ && conn_->isOpen()) conn_->sendBulk(std::move(f));
  };
  hooks.joined = [this](int node, const std::string& ip) {
    if (spawner_) spawner_->daemonConnected(node);
    sendUp({{"t", "child_joined"}, {"node", node}, {"ip", ip}}, false);
  };
  hooks.lost = [this](int node, const std::string& reason) {
    spdlog::warn("lost tree child node {} ({})", node, reason);
    sendUp({{"t", "child_lost"}, {"node", node}, {"reason", reason}}, travelsBehindOutput("child_lost"));
  };
  tree_ = std::make_unique<TreeChildren>(io_, opts_.secret, std::move(hooks));
}

void DaemonSession::sendUp(Json&& msg, bool bulk) {
  if (!conn_ || !conn_->isOpen()) return;
  if (getString(msg, "t") == "fence") {  // a child's subtree share: it joins ours
    // One that did not fit goes up as its own, untagged: the frontend ends the job saying why
    // (a tagged fence share, relayed as it came, is refused by a daemon above).
    if (msg.contains("too_big")) {
      msg.erase(kSourceTag);
      return conn_->send(msg);
    }
    if (auto combined = subtree_fence_.addRelayed(std::move(msg), 1 + tree_->openChildren()))
      conn_->send(fenceThatFits(std::move(*combined)));
    return;
  }
  conn_->send(msg, bulk);
}

void DaemonSession::sendOwn(const Json& msg) {
  if (!conn_ || !conn_->isOpen()) return;
  if (getString(msg, "t") == "fence") {
    Json own = fenceThatFits(msg);
    if (own.contains("too_big") || tree_->openChildren() == 0) return conn_->send(own);
    if (auto combined = subtree_fence_.add(own, opts_.node_index, 1 + tree_->openChildren()))
      conn_->send(fenceThatFits(std::move(*combined)));
    return;
  }
  conn_->send(msg);
}

bool DaemonSession::relayDown(Json& msg) {
  const std::string type = getString(msg, "t");
  // A fence of the whole job ended (a broadcast): nothing more of it to gather. One node's own
  // answer (after a failed rank, the frontend answers each node "lost" as its share arrives,
  // the message passing through here on its way down) ends nothing for the others.
  if (type == "fence_done" && msg.contains(kEveryNodeTag))
    subtree_fence_.forget(static_cast<uint64_t>(getInt(msg, "seq")));
  // A rank of the job failed (--keep-going): no fence of the whole job can complete, and a node
  // whose ranks are all gone would never contribute. What this subtree gathered goes up now,
  // before the news goes down, so that the frontend answers every node "lost".
  if (type == "rank_failed" && getBool(msg, "job_rank") && conn_ && conn_->isOpen())
    for (auto& share : subtree_fence_.passAll()) conn_->send(fenceThatFits(std::move(share)));
  if (auto it = msg.find(kDestinationTag); it != msg.end()) {
    const int to = it->is_number_integer() ? it->get<int>() : -1;
    if (to == opts_.node_index) return false;
    if (!tree_->sendToward(to, Connection::frameOf(msg), travelsAsBulkDown(type)))
      spdlog::warn("a '{}' for node {}, which is not below this node, dropped", type, to);
    return true;
  }
  if (msg.contains(kEveryNodeTag)) {
    // A broadcast goes on to the children as it came, sealed once by the frontend for all (the
    // frontend sends every "@all" message as one).
    const Connection* from = deliveringConnection();
    if (auto b = from ? from->deliveringBroadcast() : nullptr) tree_->sendAll(b, travelsAsBulkDown(type));
    else spdlog::warn("a '{}' for every node that did not come as a broadcast was not passed on", type);
  }
  return false;
}

const Connection* DaemonSession::deliveringConnection() const {
  return UpstreamBroadcasts::delivering(conn_, leaving_);
}

void DaemonSession::handleTree(const Json& msg) {
  const int index = static_cast<int>(getInt(msg, "index", -1));
  const TreeShape shape{static_cast<int>(getInt(msg, "nodes")), static_cast<int>(getInt(msg, "radix", 1))};
  if (index < 0 || index >= shape.nodes || shape.fanout < 1) {
    spdlog::error("the frontend sent a malformed place in the control tree");
    return frontendLost("protocol error");
  }
  opts_.node_index = index;  // under Slurm the frontend fixes it only now
  std::map<int, std::string> children;
  if (auto it = msg.find("children"); it != msg.end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_string()) children[std::atoi(k.c_str())] = v.get<std::string>();
  tree_->place(index, shape, std::move(children));
  if (auto it = msg.find("spawn"); it != msg.end() && it->is_object()) spawnChildren(*it);
  if (auto it = msg.find("parent"); it != msg.end() && it->is_object())
    attachToParent(getString(*it, "host"), static_cast<int>(getInt(*it, "port")), getString(*it, "name"));
}

void DaemonSession::attachToParent(const std::string& host, int port, const std::string& parent_name) {
  auto failed = [this, host, port, parent_name](const std::string& why) {
    if (!attaching_) return;  // answered already
    attaching_ = false;
    if (parent_) parent_->close();
    parent_.reset();
    attach_timer_.cancel();
    spdlog::warn("cannot attach to tree parent {} at {}:{}: {}", parent_name, host, port, why);
    if (conn_ && conn_->isOpen()) conn_->send({{"t", "attach_failed"}, {"reason", why}});
  };
  asio::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  if (ec || port <= 0 || port > 65535) {
    if (conn_ && conn_->isOpen())
      conn_->send({{"t", "attach_failed"}, {"reason", "no usable address for it (" + host + ":" + std::to_string(port) + ")"}});
    return;
  }
  auto sock = std::make_shared<asio::ip::tcp::socket>(io_);
  attaching_ = true;
  attach_timer_.expires_after(kChallengeTimeout);
  attach_timer_.async_wait([failed](const asio::error_code& e) {
    if (!e) failed("no welcome within 10 s");
  });
  sock->async_connect({addr, static_cast<unsigned short>(port)}, [this, sock, failed, parent_name](const asio::error_code& cec) {
    if (!attaching_) return;
    if (cec) return failed(cec.message());
    parent_ = Connection::create(std::move(*sock));
    auto nonce = std::make_shared<std::string>();
    parent_->start(
        [this, failed, nonce, parent_name](Json&& m) {
          const std::string t = getString(m, "t");
          if (t == "challenge" && nonce->empty() && getInt(m, "proto") == kProtocolVersion) {
            *nonce = bytesOf(m["nonce"]);
            parent_client_nonce_ = randomBytes(kNonceBytes);
            parent_->send(helloMessage(*nonce, parent_client_nonce_));
            parent_->sealFromNow(std::make_unique<FrameCipher>(opts_.secret, *nonce, parent_client_nonce_,
                                                               FrameCipher::Direction::to_frontend));
          } else if (t == "welcome" && !nonce->empty() &&
                     constantTimeEquals(bytesOf(m["mac"]), welcomeProof(opts_.secret, *nonce, parent_client_nonce_))) {
            parent_->openFromNow(std::make_unique<FrameCipher>(opts_.secret, *nonce, parent_client_nonce_,
                                                               FrameCipher::Direction::to_daemon));
            switchToParent(parent_name);
          } else {
            failed("it answered '" + t + "' without proving the job secret");
          }
        },
        [failed](const std::string& reason) { failed("it closed the connection (" + reason + ")"); });
  });
}

void DaemonSession::switchToParent(const std::string& parent_name) {
  attach_timer_.cancel();
  attaching_ = false;
  upstream_parent_ = parent_name;
  upstream_heard_ = std::chrono::steady_clock::now();
  auto direct = conn_;
  conn_ = std::move(parent_);
  conn_->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
  conn_->setDeadPeerTimeout(dead_peer_timeout_);
  conn_->setHandlers([this](Json&& m) { onMessage(std::move(m)); }, [this](const std::string& r) { onClose(r); });
  // The frontend closes the direct connection once it reads "attached"; what it sent before
  // that (pings) is still read, and its closing is expected.
  leaving_ = direct;
  direct->setHandlers([this](Json&& m) { onMessage(std::move(m)); },
                      [this](const std::string&) { asio::post(io_, [this] { leaving_.reset(); }); });
  // Behind whatever waits in the direct link's bulk queue (a child's child_lost): the frontend
  // reads nothing on that link after "attached".
  direct->send({{"t", "attached"}}, /*bulk=*/true);
  spdlog::debug("attached to the tree parent at {}", conn_->peer());
}

}  // namespace tlaunch
