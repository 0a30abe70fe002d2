// The frontend's listening socket: strangers get a challenge, 4 KiB frames and 5 s to prove the
// job's secret; a daemon that does becomes a link, sealed from its welcome on.
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/close_fds.h"
#include "bootstrap/stranger_eviction.h"
#include "binding/preflight/preflight_report.h"
#include "bootstrap/node_launch_json.h"
#include "launcher/cli_values.h"
#include "launcher/cross_node_preflight.h"
#include "launcher/job_inspector.h"
#include "launcher/nccl/nccl_job_check.h"
#include "launcher/phase_timing.h"
#include "launcher/pmix_collectives.h"
#include "launcher/pmix_directory.h"
#include "launcher/pmix_job_control.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/rank_failure_policy.h"
#include "launcher/stdin_credit.h"
#include "tlaunch/version.h"
#include "bootstrap/error_text.h"

namespace tlaunch {

void JobSession::accept() {
  acceptor_.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of file descriptors (a flood of connections): make room, and try again a moment
      // later instead of spinning on an accept that keeps failing.
      if (ec == asio::error::no_descriptors || ec.value() == ENFILE) dropOneStranger();
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](const asio::error_code& e) {
        if (!e) accept();
      });
      return;
    }
    challenge(Connection::create(std::move(socket)));  // 4 KiB frames until authenticated
    acceptQueued();
    accept();
  });
}

void JobSession::acceptQueued() {
  // One srun step starts every daemon at once: take what the kernel has queued now, not one
  // connection per turn of the loop, so that its listen queue does not overflow (an overflowed
  // handshake leaves a daemon waiting for a challenge that never comes; it reconnects after
  // 10 s, see DaemonSession::awaitChallenge).
  asio::error_code ec;  // the acceptor is non-blocking since listen(): an empty queue ends the loop
  for (int i = 0; i < kAcceptBurst && !ec; ++i) {
    asio::ip::tcp::socket socket(io_);
    acceptor_.accept(socket, ec);
    if (!ec) challenge(Connection::create(std::move(socket)));
  }
}

void JobSession::adopt(std::unique_ptr<ByteStream> stream) { challenge(Connection::create(std::move(stream))); }

void JobSession::challenge(std::shared_ptr<Connection> conn) {
  if (pending_.size() >= pendingLimit()) dropOneStranger();
  auto p = std::make_unique<Pending>();
  p->conn = std::move(conn);
  p->nonce = randomBytes(kNonceBytes);
  p->since = Clock::now();
  p->id = next_pending_id_++;
  Pending* raw = p.get();
  pending_.push_back(std::move(p));
  raw->conn->start([this, raw](Json&& m) { onPendingMessage(raw, std::move(m)); },
                   [this, raw](const std::string&) {
                     std::erase_if(pending_, [raw](const auto& q) { return q.get() == raw; });
                   });
  raw->conn->send({{"t", "challenge"}, {"proto", kProtocolVersion}, {"nonce", binary(raw->nonce)}});
}

void JobSession::forgetPendingLater(const Pending& p) {
  asio::post(io_, [this, id = p.id] { std::erase_if(pending_, [id](const auto& q) { return q->id == id; }); });
}

void JobSession::welcome(Connection& conn, const std::string& server_nonce, const std::string& client_nonce) {
  // The welcome proves the secret and nothing more: the daemon reads it under the 4 KiB limit
  // of a connection not yet authenticated. Every frame after the hello and the welcome is
  // sealed under this connection's session keys.
  conn.openFromNow(std::make_unique<FrameCipher>(cfg_.secret, server_nonce, client_nonce,
                                                 FrameCipher::Direction::to_frontend));
  conn.send({{"t", "welcome"}, {"mac", binary(welcomeProof(cfg_.secret, server_nonce, client_nonce))}});
  conn.sealFromNow(std::make_unique<FrameCipher>(cfg_.secret, server_nonce, client_nonce,
                                                 FrameCipher::Direction::to_daemon));
}

void JobSession::supersede(Pending* p, const Json& hello, const Link& link) {
  auto conn = p->conn;
  welcome(*conn, p->nonce, bytesOf(hello["nonce"]));
  conn->send({{"t", "superseded"}});
  conn->setHandlers([](Json&&) {}, [](const std::string&) {});
  conn->closeAfterFlush();
  if (cfg_.spec.verbose)
    out_.note("node " + link.name + ": the tlaunchd its warm daemon started after all (too late) was told to end; " +
              "the one started over " + starter_->name() + " serves the node");
  forgetPendingLater(*p);
}

void JobSession::noteAnomaly(const std::string& text) {
  if (++anomalies_ <= kAnomaliesShown)
    out_.note(text + (anomalies_ == kAnomaliesShown ? " (further such notes are not shown)" : ""));
}

void JobSession::refuseProved(Pending* p, const Json& hello, const std::string& why) {
  auto conn = p->conn;
  noteAnomaly("refused a tlaunchd from " + conn->peer() + " that proved the job secret: " + why);
  welcome(*conn, p->nonce, bytesOf(hello["nonce"]));
  conn->send({{"t", "refused"}, {"reason", why}});
  conn->setHandlers([](Json&&) {}, [](const std::string&) {});
  conn->closeAfterFlush();
  forgetPendingLater(*p);
}

void JobSession::onPendingMessage(Pending* p, Json&& msg) {
  auto conn = p->conn;
  auto drop = [this, p, conn](const std::string& why) {
    // Said for the first few only: a stranger must not be able to flood the job's stderr.
    if (++rejections_ <= kRejectionsShown)
      out_.note("rejected a daemon connection from " + conn->peer() + ": " + why +
                (rejections_ == kRejectionsShown ? " (further rejections are not shown)" : ""));
    conn->close();
    forgetPendingLater(*p);
  };
  if (getString(msg, "t") != "hello") return drop("expected a hello");
  const std::string node = getString(msg, "node");
  if (!constantTimeEquals(bytesOf(msg["mac"]), helloProof(cfg_.secret, p->nonce, bytesOf(msg["nonce"]), node))) {
    return drop("it did not prove the job secret (authentication failed)");
  }
  // Authenticated: from here on a problem is the job's, not a stranger's.
  Link* link = nullptr;
  const long long idx = getInt(msg, "index", -1);
  if (idx >= 0 && idx < static_cast<long long>(links_.size()) && links_[idx]->name == node) {
    link = links_[idx].get();
  } else {
    for (auto& l : links_)
      if (l->name == node) link = l.get();
  }
  if (!link && cfg_.unnamed_nodes > static_cast<int>(links_.size())) {
    // srun chose the nodes: take them as they come; indices are fixed by name once all are in.
    auto l = std::make_unique<Link>();
    l->index = static_cast<int>(links_.size());
    l->name = node;
    link = l.get();
    links_.push_back(std::move(l));
  }
  if (!link) return refuseProved(p, msg, "node '" + node + "' is not a node of this job");
  // Its keeper answered too late: the node was handed to ssh or srun meanwhile, whose daemon
  // serves it. This one is told so (after the welcome: from us, not from a stranger) and ends.
  if (getString(msg, "via") == "keeper" && starter_->keeperGivenUp(link->index)) return supersede(p, msg, *link);
  if (link->conn || link->routed) return refuseProved(p, msg, "node " + node + " is connected already");
  if (getInt(msg, "proto") != kProtocolVersion || getString(msg, "version") != kVersion) {
    conn->close();
    fail(exitStatusFor(Errc::protocol),
         "tlaunchd on node " + node + " is version " + getString(msg, "version", "?") + " (protocol " +
             std::to_string(getInt(msg, "proto")) + "), but this tlaunch is " + kVersion + " (protocol " +
             std::to_string(kProtocolVersion) + "); install the same tlaunch on every node or pass --daemon-path");
    return;
  }
  const std::string server_nonce = p->nonce;
  conn->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
  conn->setDeadPeerTimeout(std::chrono::seconds(cfg_.spec.heartbeat_timeout_s));
  link->conn = conn;
  link->last_heard = Clock::now();
  starter_->daemonConnected(link->index);
  if (fallback_starter_) fallback_starter_->daemonConnected(link->index);
  link->control_ip = conn->peer().substr(0, conn->peer().rfind(':'));
  if (const auto k = msg.find("keeper"); k != msg.end() && k->is_object()) {
    if (k->contains("error"))
      out_.note("node " + node + " will not stay warm after the job (--keep-daemons): " + getString(*k, "error"));
    else
      starter_->daemonKeeps(link->index, {link->control_ip, static_cast<int>(getInt(*k, "port")), getInt(*k, "pid"),
                                          getInt(*k, "since")});
  }
  std::erase_if(pending_, [p](const auto& q) { return q.get() == p; });
  conn->setHandlers([this, link](Json&& m) { onLinkMessage(*link, std::move(m)); },
                    [this, link](const std::string& r) { onLinkClosed(*link, r); });
  conn->setOutputHandler([this, link](const OutputRecord& r, OwnedBytes&& owned) {
    link->last_heard = Clock::now();
    if (inspector_) inspector_->noteOutput();
    const int source = outputSource(*link, r.rank);
    if (source >= 0) return out_.write(source, r.rank, r.stream, r.kind, std::move(owned));
    // Output of a rank neither on that node nor below it: not shown under another node's
    // name. A node that sent it itself gets its credit back at once (its window would shrink
    // for good); relayed through a tree, whose window it took is not known.
    if (!tree_) grantOutputCredit(link->index, outputCreditCost(r.bytes.size()));
    noteAnomaly("node " + link->name + " sent output of rank " + std::to_string(r.rank) +
                ", which does not run there or below it; dropped");
  });
  // What the starter said before this daemon could connect ("srun: job 11 has been allocated
  // resources"): now, before the job's own lines; a short job could end before the next tick.
  sayStarterNotes();
  welcome(*conn, server_nonce, bytesOf(msg["nonce"]));  // the configuration is its first sealed frame
  conn->send({{"t", "config"}, {"config", daemonConfigFor(*link)}});
  if (tree_) placeInTree(*link);  // tree spawn: it starts its children now
}

Json JobSession::daemonConfigFor(const Link&) const {
  Json config = cfg_.daemon_config;
  config["heartbeat_ms"] = 1000;
  config["heartbeat_timeout_ms"] = cfg_.spec.heartbeat_timeout_s * 1000;
  config["output_window"] = outputWindow();
  return config;
}

size_t JobSession::pendingLimit() const {
  // Every daemon not yet authenticated may be connecting at this moment (one srun step starts
  // them all at once), plus room for strangers; beyond that a stranger goes, chosen so that a
  // flood from one host displaces its own connections, not the daemons' (dropOneStranger).
  const size_t expected = std::max(cfg_.nodes.size(), static_cast<size_t>(std::max(0, cfg_.unnamed_nodes)));
  const auto connected =
      static_cast<size_t>(std::count_if(links_.begin(), links_.end(), [](const auto& l) { return l->conn != nullptr || l->routed; }));
  const size_t missing = expected > connected ? expected - connected : 0;
  return kMaxPendingConnections + missing;
}

void JobSession::dropOneStranger() {
  // Among the open ones: a rejected one is already closed and on its way out.
  const auto victim = strangerToDrop(
      pending_.begin(), pending_.end(), [](const auto& p) { return p->conn->isOpen(); },
      [](const auto& p) { return std::string_view(p->conn->peer()); }, [](const auto& p) { return p->since; },
      Clock::now());
  if (victim == pending_.end()) return;
  auto conn = (*victim)->conn;
  pending_.erase(victim);
  conn->close();
}

// Every daemon has confirmed the end of its ranks, or is gone (nothing left to wait for).

Result<void> JobSession::listen() {
  asio::error_code ec;
  auto addr = asio::ip::make_address(cfg_.listen_address, ec);
  if (ec) return tlaunch::fail(Errc::usage, "bad listen address " + cfg_.listen_address);
  asio::ip::tcp::endpoint ep(addr, 0);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) markCloseOnExec(acceptor_.native_handle());
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  // As deep as the system allows (net.core.somaxconn): daemons of one srun step connect at once.
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) acceptor_.non_blocking(true, ec);  // for acceptQueued(); asynchronous accepts are unaffected
  if (ec) return tlaunch::fail(Errc::io, "cannot listen on " + cfg_.listen_address + ": " + ec.message());
  return {};
}

}  // namespace tlaunch
