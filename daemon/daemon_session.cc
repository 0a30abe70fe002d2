#include "daemon/daemon_session.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "daemon/rdma_pair_agent.h"
#include "binding/rdma/rdma_pair_protocol.h"
#include "binding/rdma/verbs_api.h"
#include "bootstrap/auth.h"
#include "bootstrap/close_fds.h"
#include "bootstrap/node_launch_json.h"
#include "daemon/job_marked_processes.h"
#include "daemon/output_channel.h"
#include "daemon/rank_error_file.h"
#include "daemon/rank_launches.h"
#include "daemon/stack_collector.h"
#include "daemon/stale_job_files.h"
#include "daemon/tree_children.h"
#include "tlaunch/version.h"

namespace tlaunch {

DaemonSession::DaemonSession(asio::io_context& io, DaemonOptions options)
    : io_(io), opts_(std::move(options)), probe_acceptor_(io), probe_retry_(io), heartbeat_timer_(io), exit_timer_(io), challenge_timer_(io), connect_timer_(io),
      attach_timer_(io), give_up_timer_(io) {}

DaemonSession::~DaemonSession() = default;

void DaemonSession::start() {
  // A listener for the other daemons' reachability probes and for tree children.
  startTreeListener();
  asio::error_code ec;
  probe_acceptor_.open(asio::ip::tcp::v4(), ec);
  if (!ec) markCloseOnExec(probe_acceptor_.native_handle());
  if (!ec) probe_acceptor_.bind({asio::ip::address_v4::any(), 0}, ec);
  if (!ec) probe_acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) probe_acceptor_.non_blocking(true, ec);  // for the queued ones (acceptProbes)
  if (ec) spdlog::warn("cannot open the reachability probe listener: {}", ec.message());
  else acceptProbes();
  connect(0);
}

void DaemonSession::onMessage(Json&& msg) {
  const std::string t = msg["t"].get<std::string>();
  if (!authenticated_) {
    if (t == "challenge" && server_nonce_.empty()) return handleChallenge(msg);
    if (t == "welcome" && !server_nonce_.empty()) return handleWelcome(msg);
    spdlog::error("unexpected '{}' before authentication; dropping the connection", t);
    frontendLost("protocol error");
    return;
  }
  upstream_heard_ = std::chrono::steady_clock::now();
  // Twice while this node switches to its tree parent (daemon/upstream_broadcasts.h): once.
  if (const Connection* from = deliveringConnection(); from && !upstream_broadcasts_.firstTime(*from)) return;
  if (relayDown(msg)) return;
  if (!router_.route(std::move(msg))) spdlog::warn("ignoring unknown message '{}' from the frontend", t);
}

void DaemonSession::handleChallenge(const Json& msg) {
  challenge_timer_.cancel();
  if (getInt(msg, "proto") != kProtocolVersion) {
    conn_->send({{"t", "hello"}, {"proto", kProtocolVersion}, {"version", kVersion}, {"node", opts_.node_name},
                 {"error", "protocol mismatch"}});
    conn_->closeAfterFlush();
    shutdown(76);
    return;
  }
  server_nonce_ = bytesOf(msg["nonce"]);
  client_nonce_ = randomBytes(kNonceBytes);
  conn_->send(helloMessage(server_nonce_, client_nonce_));
  // Everything after the hello is sealed (bootstrap/frame_cipher.h).
  conn_->sealFromNow(std::make_unique<FrameCipher>(opts_.secret, server_nonce_, client_nonce_,
                                                   FrameCipher::Direction::to_frontend));
}

Json DaemonSession::helloMessage(const std::string& server_nonce, const std::string& client_nonce) const {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  Json hello = {{"t", "hello"},
                {"proto", kProtocolVersion},
                {"version", kVersion},
                {"node", opts_.node_name},
                {"index", opts_.node_index},
                {"hostname", host},
                {"pid", ::getpid()},
                {"nonce", binary(client_nonce)},
                {"mac", binary(helloProof(opts_.secret, server_nonce, client_nonce, opts_.node_name))}};
  if (opts_.via_keeper) hello["via"] = "keeper";
  if (opts_.keeper_port > 0)
    hello["keeper"] = {{"port", opts_.keeper_port}, {"pid", opts_.keeper_pid}, {"since", opts_.keeper_since}};
  else if (!opts_.keeper_error.empty())
    hello["keeper"] = {{"error", opts_.keeper_error.substr(0, 512)}};
  return hello;
}

void DaemonSession::handleWelcome(const Json& msg) {
  if (!constantTimeEquals(bytesOf(msg["mac"]), welcomeProof(opts_.secret, server_nonce_, client_nonce_))) {
    spdlog::error("the frontend at {} failed to prove the job secret; exiting", conn_->peer());
    frontendLost("authentication failed");
    return;
  }
  authenticated_ = true;
  if (!opts_.tree_parent.empty()) {  // started by its tree parent and connected to it (tree spawn)
    upstream_parent_ = opts_.tree_parent;
    upstream_heard_ = std::chrono::steady_clock::now();
    // Watched from now, not from the config: a parent frozen before passing it on would
    // otherwise leave this daemon waiting for ever, an orphan of a job that has ended.
    dead_peer_timeout_ = opts_.tree_parent_timeout;
    heartbeat();
  }
  // From here on this daemon lives as long as its control connection, not as long as whatever
  // started it: a killed ssh client (or its sshd session going away) must not end the job.
  ::prctl(PR_SET_PDEATHSIG, 0);
  conn_->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
  conn_->openFromNow(std::make_unique<FrameCipher>(opts_.secret, server_nonce_, client_nonce_,
                                                   FrameCipher::Direction::to_daemon));
}

void DaemonSession::handleConfig(const Json& msg) {
  // The configuration comes only to a daemon the frontend accepted, and with it wrote this
  // node's keeper down (--keep-for): the keeper may now outlive us. Until this byte, it ends
  // with us: a daemon refused (after its welcome: "refused", "superseded") or never connected
  // leaves a keeper nobody knows of, for up to a week.
  if (opts_.keeper_lifeline_fd >= 0 && !keeper_told_) {
    keeper_told_ = true;
    const char known = '1';
    if (::write(opts_.keeper_lifeline_fd, &known, 1) != 1)
      spdlog::warn("cannot tell this node's warm-daemon keeper that it is written down: it ends with the job");
  }
  if (output_) return;  // once per job
  const Json& config = msg.contains("config") ? msg["config"] : Json::object();
  heartbeat_interval_ = std::chrono::milliseconds(std::clamp<long long>(getInt(config, "heartbeat_ms", 1000), 10, 60'000));
  const auto dead_peer = std::chrono::milliseconds(
      std::clamp<long long>(getInt(config, "heartbeat_timeout_ms", 15000), 1000, 86'400'000));  // --heartbeat-timeout's range
  conn_->setDeadPeerTimeout(dead_peer);
  dead_peer_timeout_ = dead_peer;
  tree_->setDeadPeerTimeout(dead_peer);
  OutputChannel::Limits limits;
  limits.window = static_cast<size_t>(std::clamp<long long>(getInt(config, "output_window", 4 << 20), 64 << 10, 64 << 20));
  output_ = std::make_unique<OutputChannel>(
      limits,
      [this](OutputChannel::Frame f) {
        if (conn_ && conn_->isOpen()) conn_->sendBulk(std::move(f));
      },
      [this](bool pause) {
        if (!ranks_) return;
        if (pause) ranks_->pauseOutput();
        else ranks_->resumeOutput();
      });
  nccl_check_ = getString(config, "nccl_check", "off");
  tell_mpi_ranks_ = getBool(config, "tell_mpi_ranks");
  heartbeat();
  sendInventory(config);
}

void DaemonSession::heartbeat() {
  // Our pings tell the frontend (and our tree children) we are alive. The frontend's silence does
  // not end the job: a frontend that is stopped (Ctrl-Z) keeps its connection and its job. One
  // whose host is gone leaves our pings unacknowledged at the TCP level (an idle connection's
  // keepalive closes it too). A tree parent's silence does: the frontend has then given it up
  // (it no longer answers the frontend's heartbeats either), and its teardown cannot reach us.
  if (done_) return;
  if (conn_ && conn_->isOpen()) {
    if (const auto silent = conn_->unansweredFor(); silent > dead_peer_timeout_) {
      return frontendLost((upstream_parent_.empty() ? std::string("the frontend's host") : "node " + upstream_parent_) +
                          " acknowledged nothing we sent for " + std::to_string(silent.count() / 1000) + " s");
    }
    // Not behind one still waiting: a peer that reads nothing (stopped for days) would otherwise
    // make the queue grow by a ping a second.
    if (conn_->controlFramesWaiting() == 0) conn_->send({{"t", "ping"}});
  }
  tree_->pingAll();
  tree_->checkLiveness(dead_peer_timeout_);
  if (!upstream_parent_.empty() && std::chrono::steady_clock::now() - upstream_heard_ > dead_peer_timeout_) {
    return frontendLost("no heartbeat from node " + upstream_parent_ + ", its parent in the control tree, for " +
                        std::to_string(dead_peer_timeout_.count() / 1000) + " s");
  }
  pollSpawned();
  heartbeat_timer_.expires_after(heartbeat_interval_);
  heartbeat_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) heartbeat();
  });
}

void DaemonSession::handlePrepare(const Json& msg) {
  auto reply_error = [&](const Error& e) {
    conn_->send({{"t", "prepare_failed"}, {"code", static_cast<int>(e.code)}, {"message", e.message}, {"hint", e.hint}});
  };
  // The job's shared part ("job") came before this launch, once for every node.
  std::optional<SharedLaunch> shared;
  if (job_shared_.contains("launch")) {
    auto s = sharedLaunchFromJson(job_shared_["launch"]);
    if (!s) return reply_error(s.error());
    shared = std::move(*s);
  }
  auto launch = nodeLaunchFromJson(msg.contains("launch") ? msg["launch"] : Json(), shared ? &*shared : nullptr);
  if (!launch) return reply_error(launch.error());
  if (launch->pmix.enabled && launch->pmix.node_names.empty()) {
    if (!job_shared_.contains("pmix"))
      return reply_error(Error{Errc::protocol, "the job's geometry did not arrive before its launch", ""});
    if (auto g = applyPmixGeometry(job_shared_["pmix"], launch->pmix); !g) return reply_error(g.error());
  }
  launch_ = std::move(*launch);
  if (auto cwd = checkWorkingDirectory(launch_->cwd, launch_->node_name); !cwd) return reply_error(cwd.error());
  if (auto tmp = checkNodeTmpBase(launch_->node_name); !tmp) return reply_error(tmp.error());
  auto exe = resolveProgram(launch_->argv[0], programSearchPath(launch_->base_env), launch_->cwd, launch_->node_name);
  if (!exe) return reply_error(exe.error());
  if (auto r = probePeers(); !r) return reply_error(r.error());
  if (launch_->pmix.enabled && !pmix_) {
    auto bridge = PmixBridge::start(io_, *launch_, [this](const Json& m) { sendOwn(m); }, topology_xml_);
    if (!bridge) {
      Error e = bridge.error();
      e.message = "node " + launch_->node_name + ": the PMIx server did not start: " + e.message;
      e.hint = "tlaunch --pmix=off runs without it (MPI programs then need mpirun)";
      return reply_error(e);
    }
    pmix_ = std::move(*bridge);
    if (tell_mpi_ranks_) pmix_->setMpiProbe([this](int rank) { return rankRunsMpi(rank); });  // --keep-going
  }
  conn_->send({{"t", "prepared"}});
}

void DaemonSession::handleStart() {
  if (!launch_ || ranks_) return;
  auto launches = buildRankLaunches(*launch_);
  if (launches && pmix_) {
    for (auto& l : *launches) {
      if (auto r = pmix_->setupFork(l.rank, l.env); !r) {
        launches = tl::unexpected(r.error());
        break;
      }
      // torchrun's error file for @record, unless the user named one (daemon/rank_error_file.h).
      const bool users = std::any_of(l.env.begin(), l.env.end(),
                                     [](const std::string& kv) { return kv.starts_with("TORCHELASTIC_ERROR_FILE="); });
      if (!users) l.env.push_back("TORCHELASTIC_ERROR_FILE=" + pmix_->errorFileOf(l.rank));
    }
  }
  if (!launches) {
    conn_->send({{"t", "start_failed"}, {"code", static_cast<int>(launches.error().code)}, {"message", launches.error().message}});
    return;
  }
  if (nccl_check_ != "off") startNcclWatch(*launches);
  RankSupervisor::Events ev;
  // Output, exits and the end of the ranks leave in this order, output under its credit.
  ev.output = [this](int rank, int stream, OutputKind kind, std::string_view bytes) {
    if (nccl_ && stream == 2 && kind != OutputKind::unfinished) nccl_->onStderr(rank, bytes);
    if (conn_ && conn_->isOpen()) output_->output(rank, stream, kind, bytes);
  };
  ev.stdin_written = [this](int rank, size_t bytes, bool closed) {
    if (conn_ && conn_->isOpen()) conn_->send({{"t", "stdin_credit"}, {"r", rank}, {"n", bytes}, {"closed", closed}});
  };
  ev.exited = [this](const RankExit& e) {
    if (nccl_) nccl_->pollNow(e.rank);
    const bool unfinalized = pmix_ && !e.killed_by_us && pmix_->endedWithoutFinalize(e.rank);
    if (pmix_ && !e.killed_by_us && (e.signaled || e.code != 0)) pmix_->onLocalRankFailed(e.rank);
    if (!conn_ || !conn_->isOpen()) return;
    Json report = {{"t", "exit"},
                   {"r", e.rank},
                   {"signaled", e.signaled},
                   {"code", e.code},
                   {"ours", e.killed_by_us},
                   {"at_us", e.ended_us},
                   {"tail", e.stderr_tail}};
    if (unfinalized) report["unfinalized"] = true;
    if (e.oom_killer_ran) report["oom"] = true;
    if (pmix_)  // read also for a rank the teardown ended: it may have raised first and ended last
      if (auto error = readRankErrorFile(pmix_->errorFileOf(e.rank))) report["error"] = std::move(*error);
    // A failure goes ahead of output that waits for credit (a paused `| less`): it ends the job
    // now, not once someone scrolls; the lines before it follow as the reader takes them (its
    // stderr tail travels in the report). Any other exit keeps its place after its last lines,
    // and so does a spawned process's: the last one's exit closes its spawn's --output-dir files.
    const bool jobs_rank = std::any_of(launch_->ranks.begin(), launch_->ranks.end(),
                                       [&](const RankSpec& r) { return r.rank == e.rank; });
    const bool failure = jobs_rank && !e.killed_by_us && (e.signaled || e.code != 0 || unfinalized);
    // Marked ahead also when nothing waits here: interior daemons of a tree pass it ahead of their
    // other children's output the same way (behind a flood it reached tlaunch seconds late).
    if (failure) report["ahead"] = true;
    if (failure && !output_->empty()) conn_->send(report);
    else output_->ordered(report);
  };
  ev.all_exited = [this] { onRanksEnded(); };
  ranks_ = std::make_unique<RankSupervisor>(io_, std::move(ev), launch_->job_id + "." + nodeNameForPaths(launch_->node_name),
                                            jobMarksOf(*launch_));
  // The ssh sessions that started this node's tree children are the spawner's, not the job's:
  // it reaps them (a failure it reports needs their exit status) and ends them after the job.
  ranks_->leaveAlone([this](pid_t pid) { return spawner_ && spawner_->owns(pid); });
  ranks_->start(std::move(*launches), [this](Result<void> r) {
    if (!conn_ || !conn_->isOpen()) return;
    if (!r) {
      conn_->send({{"t", "start_failed"}, {"code", static_cast<int>(r.error().code)}, {"message", r.error().message + " (node " + launch_->node_name + ")"}});
      return;
    }
    conn_->send({{"t", "started"}, {"containment", ranks_->containmentNote()}});
  });
}

}  // namespace tlaunch
