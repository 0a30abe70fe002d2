#include "tests/scale/sim_daemons.h"

#include <algorithm>
#include <cstdio>

#include "bootstrap/auth.h"
#include "bootstrap/connection.h"
#include "bootstrap/frame_cipher.h"
#include "bootstrap/inventory_codec.h"
#include "bootstrap/message.h"
#include "daemon/subtree_fence.h"
#include "daemon/tree_children.h"
#include "daemon/upstream_broadcasts.h"
#include "tlaunch/version.h"

namespace tlaunch::scale {

using Clock = std::chrono::steady_clock;

// One simulated tlaunchd: the daemon's side of the protocol, reduced to what a healthy node
// says at each step (daemon/daemon_session*.cc is the real one).
class SimDaemons::Daemon {
 public:
  Daemon(SimDaemons& owner, int index)
      : owner_(owner), index_(index), name_("n" + std::to_string(index)), ping_(owner.io_), acceptor_(owner.io_) {}

  // The listener a tree parent takes its children on (the real daemon's probe listener), and
  // the real interior logic behind it (daemon/tree_children.h).
  void listen() {
    TreeChildren::Hooks hooks;
    hooks.up = [this](Json&& m, bool bulk) { sendUp(std::move(m), bulk); };
    hooks.up_output = [this](Connection::Frame f) {
      if (conn_ && conn_->isOpen()) conn_->sendBulk(std::move(f));
    };
    hooks.joined = [this](int node, const std::string& ip) {
      send({{"t", "child_joined"}, {"node", node}, {"ip", ip}});
    };
    hooks.lost = [this](int node, const std::string& why) {
      sendUp({{"t", "child_lost"}, {"node", node}, {"reason", why}}, travelsBehindOutput("child_lost"));
    };
    tree_ = std::make_unique<TreeChildren>(owner_.io_, owner_.opts_.secret, std::move(hooks));
    const asio::ip::tcp::endpoint any(asio::ip::make_address(owner_.opts_.host), 0);
    acceptor_.open(any.protocol());
    acceptor_.bind(any);
    acceptor_.listen(asio::socket_base::max_listen_connections);
    acceptChildren();
  }

  int index() const { return index_; }
  int listenerPort() const { return acceptor_.local_endpoint().port(); }

  // To the frontend, or (tree spawn) to the parent that started this daemon.
  void connect(int port) {
    port_ = port;
    auto socket = std::make_shared<asio::ip::tcp::socket>(owner_.io_);
    const asio::ip::tcp::endpoint at(asio::ip::make_address(owner_.opts_.host), static_cast<uint16_t>(port));
    socket->async_connect(at, [this, socket](const asio::error_code& ec) {
      if (ec) return failed("connect: " + ec.message());
      conn_ = Connection::create(std::move(*socket));
      conn_->start([this](Json&& m) { onMessage(std::move(m)); }, [this](const std::string& why) {
        if (!done_) failed(why);
      });
      // As tlaunchd does (DaemonSession::awaitChallenge): an accepted connection whose
      // challenge never comes was lost in an overflowed listen queue; connect again.
      ping_.expires_after(std::chrono::seconds(10));
      ping_.async_wait([this](const asio::error_code& e) {
        if (e || done_ || !server_nonce_.empty()) return;
        if (++reconnects_ > 5) return failed("no challenge after 6 connections");
        conn_->close();
        connect(port_);
      });
    });
  }

 private:
  void acceptChildren() {
    acceptor_.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket s) {
      if (ec == asio::error::operation_aborted || done_) return;
      if (!ec) tree_->adopt(std::move(s));
      acceptChildren();
    });
  }

  void onMessage(Json&& msg) {
    const std::string t = getString(msg, "t");
    // As DaemonSession::onMessage: twice while attaching to the tree parent, handled once.
    const Connection* from = UpstreamBroadcasts::delivering(conn_, leaving_);
    if (from && !upstream_broadcasts_.firstTime(*from)) return;
    // Down the tree first, as DaemonSession::relayDown does.
    if (auto it = msg.find(kDestinationTag); it != msg.end() && it->get<int>() != index_) {
      if (!tree_->sendToward(it->get<int>(), Connection::frameOf(msg),
                             travelsAsBulkDown(t)))
        failed("a message for a node not below this one");
      return;
    }
    if (t == "fence_done") subtree_fence_.forget(static_cast<uint64_t>(getInt(msg, "seq")));
    if (msg.contains(kEveryNodeTag)) {  // a broadcast goes on as it came, sealed once by the frontend
      if (auto b = from ? from->deliveringBroadcast() : nullptr) tree_->sendAll(b, travelsAsBulkDown(t));
      else failed("a message for every node that did not come as a broadcast");
    }
    const std::string& secret = owner_.opts_.secret;
    if (t == "challenge") {
      ping_.cancel();
      server_nonce_ = bytesOf(msg["nonce"]);
      client_nonce_ = randomBytes(kNonceBytes);
      conn_->send({{"t", "hello"}, {"proto", kProtocolVersion}, {"version", kVersion}, {"node", name_},
                   {"index", index_}, {"hostname", name_}, {"nonce", binary(client_nonce_)},
                   {"mac", binary(helloProof(secret, server_nonce_, client_nonce_, name_))}});
      conn_->sealFromNow(std::make_unique<FrameCipher>(secret, server_nonce_, client_nonce_,
                                                       FrameCipher::Direction::to_frontend));
    } else if (t == "welcome") {
      if (!constantTimeEquals(bytesOf(msg["mac"]), welcomeProof(secret, server_nonce_, client_nonce_)))
        return failed("the frontend's welcome did not prove the secret");
      conn_->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
      conn_->openFromNow(std::make_unique<FrameCipher>(secret, server_nonce_, client_nonce_,
                                                       FrameCipher::Direction::to_daemon));
      mark(&SimMilestones::authenticated);
    } else if (t == "config") {
      NodeInventory inv = owner_.inventory_;
      inv.node = inv.hostname = name_;
      inv.probe_port = acceptor_.local_endpoint().port();
      send({{"t", "inventory"}, {"inv", inventoryToJson(inv)}});
      pingLater();
    } else if (t == "tree") {
      std::map<int, std::string> children;
      for (const auto& [k, v] : msg["children"].items()) children[std::stoi(k)] = v.get<std::string>();
      tree_->place(index_, TreeShape{static_cast<int>(getInt(msg, "nodes")), static_cast<int>(getInt(msg, "radix"))},
                   std::move(children));
      if (msg.contains("parent")) attach(static_cast<uint16_t>(getInt(msg["parent"], "port")));
      if (msg.contains("spawn"))
        for (const auto& target : msg["spawn"]["targets"])
          owner_.spawnChild(static_cast<int>(getInt(target, "index")), listenerPort());
    } else if (t == "job") {
      // As a daemon does with PMIx on: the job's geometry arrives once, before the launch.
      const Json& names = msg["pmix"]["node_names"];
      if (!names.is_array() || static_cast<int>(names.size()) != owner_.opts_.total_nodes)
        return failed("the job's geometry does not name every node");
      has_geometry_ = true;
    } else if (t == "prepare") {
      mark(&SimMilestones::prepare);
      if (getBool(msg["launch"]["pmix"], "enabled") && !has_geometry_) return failed("a launch before the job's geometry");
      for (const auto& r : msg["launch"]["ranks"]) ranks_.push_back(static_cast<int>(getInt(r, "rank")));
      send({{"t", "prepared"}});
    } else if (t == "start") {
      mark(&SimMilestones::start);
      send({{"t", "started"}});
      fence();
    } else if (t == "fence_done") {
      if (getInt(msg, "seq") != fence_seq_) return failed("a fence_done for another fence");
      if (fence_seq_ == 1) mark(&SimMilestones::first_fence_done);
      if (!getBool(msg, "ok")) return failed("the fence failed");
      // Every node runs as many ranks as this one in the harness's jobs.
      const size_t expected =
          static_cast<size_t>(owner_.opts_.fence_bytes) * ranks_.size() * static_cast<size_t>(owner_.opts_.total_nodes);
      if (bytesOf(msg["d"]).size() != expected) return failed("the fence did not return every rank's contribution");
      if (fence_seq_ < owner_.opts_.fences) return fence();
      mark(&SimMilestones::fence_done);
      for (int r : ranks_) send({{"t", "exit"}, {"r", r}, {"code", 0}, {"signaled", false}, {"ours", false}, {"tail", Json::array()}});
      send({{"t", "all_exited"}});
    } else if (t == "terminate") {
      send({{"t", "drained"}});
    } else if (t == "shutdown") {
      mark(&SimMilestones::shutdown);
      done_ = true;
      ping_.cancel();
      tree_->expectEnd();
      asio::error_code ignore;
      acceptor_.close(ignore);
      awaitChildrenThenClose();
    }
  }

  // As DaemonSession::sendUp: a child's fence share joins ours; the rest goes up as it came.
  void sendUp(Json&& m, bool bulk) {
    if (!conn_ || !conn_->isOpen()) return;
    if (getString(m, "t") == "fence") {
      if (auto combined = subtree_fence_.addRelayed(std::move(m), 1 + tree_->openChildren())) conn_->send(*combined);
      return;
    }
    conn_->send(m, bulk);
  }

  void awaitChildrenThenClose() {  // as the real daemon does: the frontend's wait covers the subtree
    if (tree_->openChildren() == 0) {
      conn_->closeAfterFlush();
      return;
    }
    ping_.expires_after(std::chrono::milliseconds(10));
    ping_.async_wait([this](const asio::error_code&) { awaitChildrenThenClose(); });
  }

  // DaemonSession::attachToParent, reduced: the frontend's handshake again with the parent.
  void attach(uint16_t port) {
    auto socket = std::make_shared<asio::ip::tcp::socket>(owner_.io_);
    const asio::ip::tcp::endpoint at(asio::ip::make_address(owner_.opts_.host), port);
    socket->async_connect(at, [this, socket](const asio::error_code& ec) {
      if (ec) return send({{"t", "attach_failed"}, {"reason", ec.message()}});
      parent_ = Connection::create(std::move(*socket));
      parent_->start(
          [this](Json&& m) {
            const std::string& secret = owner_.opts_.secret;
            if (getString(m, "t") == "challenge") {
              parent_nonce_ = bytesOf(m["nonce"]);
              parent_client_nonce_ = randomBytes(kNonceBytes);
              parent_->send({{"t", "hello"}, {"proto", kProtocolVersion}, {"version", kVersion}, {"node", name_},
                             {"index", index_}, {"nonce", binary(parent_client_nonce_)},
                             {"mac", binary(helloProof(secret, parent_nonce_, parent_client_nonce_, name_))}});
              parent_->sealFromNow(std::make_unique<FrameCipher>(secret, parent_nonce_, parent_client_nonce_,
                                                                 FrameCipher::Direction::to_frontend));
              return;
            }
            if (!constantTimeEquals(bytesOf(m["mac"]), welcomeProof(secret, parent_nonce_, parent_client_nonce_)))
              return failed("the parent's welcome did not prove the secret");
            parent_->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
            parent_->openFromNow(std::make_unique<FrameCipher>(secret, parent_nonce_, parent_client_nonce_,
                                                               FrameCipher::Direction::to_daemon));
            auto direct = conn_;
            conn_ = std::move(parent_);
            conn_->setHandlers([this](Json&& x) { onMessage(std::move(x)); }, [this](const std::string& why) {
              if (!done_) failed("parent: " + why);
            });
            direct->setHandlers([this](Json&& x) { onMessage(std::move(x)); }, [](const std::string&) {});
            direct->send({{"t", "attached"}});
            leaving_ = direct;
          },
          [this](const std::string& why) { failed("attaching: " + why); });
    });
  }

  // Every rank's modex contribution, as this node's PMIx server would send it.
  void fence() {
    ++fence_seq_;
    const size_t bytes = static_cast<size_t>(owner_.opts_.fence_bytes) * ranks_.size();
    const Json mine = {{"t", "fence"}, {"seq", fence_seq_}, {"collect", true},
                       {"d", binary(std::string(bytes, static_cast<char>('a' + index_ % 26)))}};
    if (tree_->openChildren() == 0) return send(mine);
    if (auto combined = subtree_fence_.add(mine, index_, 1 + tree_->openChildren())) send(*combined);
  }

  void send(const Json& msg) {
    if (conn_ && conn_->isOpen()) conn_->send(msg);
  }
  void mark(Clock::time_point SimMilestones::*at) {
    auto& t = owner_.milestones_.*at;
    t = std::max(t, Clock::now());
  }
  void pingLater() {
    ping_.expires_after(std::chrono::seconds(1));
    ping_.async_wait([this](const asio::error_code& ec) {
      if (ec || done_) return;
      send({{"t", "ping"}});
      pingLater();
    });
  }
  void failed(const std::string& why) {
    if (done_) return;
    done_ = true;
    ++owner_.failures_;
    ping_.cancel();
    if (conn_) conn_->close();
    if (tree_) tree_->closeAll();
    std::fprintf(stderr, "sim daemon %s: %s\n", name_.c_str(), why.c_str());
  }

  SimDaemons& owner_;
  int index_;
  std::string name_;
  std::shared_ptr<Connection> conn_;
  std::shared_ptr<Connection> parent_, leaving_;  // attaching to the tree parent; the direct link, closing
  std::string server_nonce_, client_nonce_, parent_nonce_, parent_client_nonce_;
  std::vector<int> ranks_;
  UpstreamBroadcasts upstream_broadcasts_;
  int fence_seq_ = 0;
  int port_ = 0;
  int reconnects_ = 0;
  asio::steady_timer ping_;
  asio::ip::tcp::acceptor acceptor_;
  std::unique_ptr<TreeChildren> tree_;
  SubtreeFence subtree_fence_;
  bool done_ = false;
  bool has_geometry_ = false;
};

SimDaemons::SimDaemons(asio::io_context& io, SimOptions options, NodeInventory inventory)
    : io_(io), opts_(std::move(options)), inventory_(std::move(inventory)) {}

SimDaemons::~SimDaemons() = default;

void SimDaemons::start() {
  if (opts_.spawn) {
    const TreeShape shape{opts_.total_nodes, opts_.radix};
    for (int i = 0; i < opts_.total_nodes; ++i) {
      int top = i;
      while (shape.parentOf(top) >= 0) top = shape.parentOf(top);
      if (top % opts_.processes == opts_.process) daemons_.push_back(std::make_unique<Daemon>(*this, i));
    }
    for (auto& d : daemons_) d->listen();
    for (auto& d : daemons_)
      if (shape.parentOf(d->index()) < 0) d->connect(opts_.port);
    return;
  }
  for (int i = 0; i < opts_.nodes; ++i) daemons_.push_back(std::make_unique<Daemon>(*this, opts_.first_node + i));
  for (auto& d : daemons_) {
    d->listen();
    d->connect(opts_.port);
  }
}

void SimDaemons::spawnChild(int node, int parent_port) {
  for (auto& d : daemons_)
    if (d->index() == node) return d->connect(parent_port);
  std::fprintf(stderr, "sim: asked to start node %d, which another process simulates\n", node);
  ++failures_;
}

}  // namespace tlaunch::scale
