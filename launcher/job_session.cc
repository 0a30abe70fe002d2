#include "launcher/job_session.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/close_fds.h"
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

using Clock = std::chrono::steady_clock;

struct JobSession::Link {
  int index = 0;
  std::string name;
  std::shared_ptr<Connection> conn;
  Json inventory;
  bool has_inventory = false;
  bool prepared = false;
  bool started = false;
  bool all_exited = false;
  bool drained = false;
  bool closed = false;
  std::string control_ip;
  Clock::time_point last_heard;
  Clock::time_point reported_at, prepared_at, started_at;  // for --verbose's phase timings
};

struct JobSession::Pending {
  std::shared_ptr<Connection> conn;
  std::string nonce;
  Clock::time_point since;
};

JobSession::JobSession(asio::io_context& io, SessionConfig config, std::unique_ptr<DaemonStarter> starter,
                       OutputSink& out)
    : io_(io),
      cfg_(std::move(config)),
      starter_(std::move(starter)),
      out_(out),
      acceptor_(io),
      signals_(io, SIGINT, SIGTERM, SIGHUP),
      tick_timer_(io),
      accept_retry_(io) {
  signals_.add(SIGUSR1);
  signals_.add(SIGUSR2);
  auto send = [this](int node, const Json& msg) { sendToNode(node, msg); };
  pmix_directory_ = std::make_unique<PmixDirectory>(send);
  pmix_collectives_ = std::make_unique<PmixCollectives>(
      send, [this](int rank) { return nodeOfRank(rank); }, [this] { return static_cast<int>(links_.size()); });
  signals_.add(SIGQUIT);  // Ctrl-\: the ranks' stacks, and the job goes on
  for (const auto& n : cfg_.nodes) {
    auto l = std::make_unique<Link>();
    l->index = n.index;
    l->name = n.name;
    links_.push_back(std::move(l));
  }
}

JobSession::~JobSession() {
  out_.setDrained({});  // the sink outlives this session and its io_context
  if (stdin_) stdin_->close();
}

size_t JobSession::outputWindow() const {
  // 4 MiB a daemon, at most 64 MiB in all: what the frontend may have to hold for a paused reader.
  const size_t n = std::max<size_t>(1, links_.size());
  return std::clamp<size_t>((64u << 20) / n, 256u << 10, 4u << 20);
}

void JobSession::grantOutputCredit(int source, size_t bytes) {
  if (source < 0 || source >= static_cast<int>(links_.size())) return;
  auto& conn = links_[static_cast<size_t>(source)]->conn;
  if (conn && conn->isOpen()) conn->send({{"t", "credit"}, {"n", bytes}});
}

void JobSession::dropOldestPending() {
  if (pending_.empty()) return;
  auto conn = pending_.front()->conn;
  pending_.erase(pending_.begin());
  conn->close();
}

// Every daemon has confirmed the end of its ranks, or is gone (nothing left to wait for).
bool JobSession::allDrained() const {
  return std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->drained || l->closed || !l->conn; });
}

std::string JobSession::nodeLabel(int index) const {
  return index >= 0 && index < static_cast<int>(links_.size()) ? links_[index]->name : "?";
}

Result<void> JobSession::listen() {
  asio::error_code ec;
  auto addr = asio::ip::make_address(cfg_.listen_address, ec);
  if (ec) return tlaunch::fail(Errc::usage, "bad listen address " + cfg_.listen_address);
  asio::ip::tcp::endpoint ep(addr, 0);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) markCloseOnExec(acceptor_.native_handle());
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(1024, ec);
  if (ec) return tlaunch::fail(Errc::io, "cannot listen on " + cfg_.listen_address + ": " + ec.message());
  return {};
}

JobOutcome JobSession::run() {
  started_at_ = Clock::now();
  if (auto r = listen(); !r) {
    return {exitStatusFor(r.error().code), r.error().message, {}, -1};
  }
  // Output credit goes back to a daemon as its bytes leave the sink (on the sink's thread).
  // The gate closes when the session's loop ends: the sink's thread goes on writing (its
  // destructor flushes) after the io_context and this session are gone.
  auto gate = credit_gate_;
  out_.setDrained([this, gate](int source, size_t bytes) {
    std::lock_guard lk(gate->mu);
    if (gate->open) asio::post(io_, [this, source, bytes] { grantOutputCredit(source, bytes); });
  });
  accept();
  watchSignals();
  startInspector();
  DaemonCommand cmd;
  cmd.daemon_path = cfg_.daemon_path;
  const auto port = acceptor_.local_endpoint().port();
  const std::string& advertised = cfg_.advertise_address.empty() ? cfg_.listen_address : cfg_.advertise_address;
  const std::string host = advertised.find(':') != std::string::npos ? "[" + advertised + "]" : advertised;
  cmd.args = {"--connect", host + ":" + std::to_string(port), "--job-id", cfg_.plan_context.job_id};
  if (auto r = starter_->start(cfg_.starter_nodes.empty() ? cfg_.nodes : cfg_.starter_nodes, cmd, cfg_.secret); !r) {
    fail(exitStatusFor(r.error().code), r.error().message);
  }
  phase_deadline_ = Clock::now() + std::chrono::seconds(cfg_.spec.connect_timeout_s);
  tick();
  io_.run();
  {
    std::lock_guard lk(credit_gate_->mu);
    credit_gate_->open = false;
  }
  out_.setDrained({});
  starter_->stop(5000);  // daemons exit on their own after "shutdown"; this is for stragglers
  return outcome_;
}

void JobSession::accept() {
  acceptor_.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of file descriptors (a flood of connections): make room, and try again a moment
      // later instead of spinning on an accept that keeps failing.
      if (ec == asio::error::no_descriptors || ec.value() == ENFILE) dropOldestPending();
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](const asio::error_code& e) {
        if (!e) accept();
      });
      return;
    }
    {
      if (pending_.size() >= kMaxPendingConnections) dropOldestPending();
      auto p = std::make_unique<Pending>();
      p->conn = Connection::create(std::move(socket));  // 4 KiB frames until authenticated
      p->nonce = randomBytes(kNonceBytes);
      p->since = Clock::now();
      Pending* raw = p.get();
      pending_.push_back(std::move(p));
      raw->conn->start([this, raw](Json&& m) { onPendingMessage(raw, std::move(m)); },
                       [this, raw](const std::string&) {
                         std::erase_if(pending_, [raw](const auto& q) { return q.get() == raw; });
                       });
      raw->conn->send({{"t", "challenge"}, {"proto", kProtocolVersion}, {"nonce", binary(raw->nonce)}});
    }
    accept();
  });
}

void JobSession::onPendingMessage(Pending* p, Json&& msg) {
  auto conn = p->conn;
  auto drop = [this, p, conn](const std::string& why) {
    // Said for the first few only: a stranger must not be able to flood the job's stderr.
    if (++rejections_ <= kRejectionsShown)
      out_.note("rejected a daemon connection from " + conn->peer() + ": " + why +
                (rejections_ == kRejectionsShown ? " (further rejections are not shown)" : ""));
    conn->close();
    asio::post(io_, [this, p] { std::erase_if(pending_, [p](const auto& q) { return q.get() == p; }); });
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
  if (!link) return drop("unknown node '" + node + "'");
  if (link->conn) return drop("node " + node + " connected twice");
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
  link->control_ip = conn->peer().substr(0, conn->peer().rfind(':'));
  std::erase_if(pending_, [p](const auto& q) { return q.get() == p; });
  conn->setHandlers([this, link](Json&& m) { onLinkMessage(*link, std::move(m)); },
                    [this, link](const std::string& r) { onLinkClosed(*link, r); });
  conn->setOutputHandler([this, link](const OutputRecord& r, OwnedBytes&& owned) {
    link->last_heard = Clock::now();
    if (inspector_) inspector_->noteOutput();
    out_.write(link->index, r.rank, r.stream, r.kind, std::move(owned));
  });
  Json config = cfg_.daemon_config;
  config["heartbeat_ms"] = 1000;
  config["heartbeat_timeout_ms"] = cfg_.spec.heartbeat_timeout_s * 1000;
  config["output_window"] = outputWindow();
  // The welcome proves the secret and nothing more: the daemon reads it under the 4 KiB limit
  // of a connection not yet authenticated. Every frame after the hello and the welcome is
  // sealed under this connection's session keys, the configuration first.
  const std::string client_nonce = bytesOf(msg["nonce"]);
  conn->openFromNow(std::make_unique<FrameCipher>(cfg_.secret, server_nonce, client_nonce,
                                                  FrameCipher::Direction::to_frontend));
  conn->send({{"t", "welcome"}, {"mac", binary(welcomeProof(cfg_.secret, server_nonce, client_nonce))}});
  conn->sealFromNow(std::make_unique<FrameCipher>(cfg_.secret, server_nonce, client_nonce,
                                                  FrameCipher::Direction::to_daemon));
  conn->send({{"t", "config"}, {"config", config}});
}

void JobSession::onLinkMessage(Link& link, Json&& msg) {
  link.last_heard = Clock::now();
  const std::string t = msg["t"].get<std::string>();
  if (t == "ping") return;
  if (t == "stdin_credit") {
    if (stdin_) stdin_->grant(static_cast<size_t>(std::max(0LL, getInt(msg, "n"))));
    return;
  }
  if (t == "exit") return onRankExit(link, msg);
  if (t == "nccl") return onNcclSummary(msg);
  if (t == "stacks_report" || t == "status_report") {
    if (inspector_) inspector_->onReport(link.index, std::move(msg));
    return;
  }
  if (t == "fence" || t == "dmodex_req" || t == "dmodex_resp" || t == "abort") return onPmixMessage(link, t, std::move(msg));
  if (t == "pub" || t == "lookup" || t == "unpub") return pmix_directory_->onMessage(link.index, t, msg);
  if (t == "coll") return pmix_collectives_->onMessage(link.index, msg);
  if (t == "jobctl")
    return routeJobControl(link.index, msg, static_cast<int>(links_.size()), [this](int r) { return nodeOfRank(r); },
                           [this](int node, const Json& m) { sendToNode(node, m); });
  if (t == "inventory") return onInventory(link, std::move(msg["inv"]));
  if (t.rfind("rdma_", 0) == 0 || t == "reached") return onCrossNodeMessage(link, msg);
  if (t == "prepared") {
    link.prepared = true;
    link.prepared_at = Clock::now();
    if (phase_ == Phase::preparing &&
        std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->prepared; }))
      startRanks();
    return;
  }
  if (t == "prepare_failed" || t == "start_failed") {
    auto code = static_cast<Errc>(getInt(msg, "code", static_cast<int>(Errc::internal)));
    fail(exitStatusFor(code), describeError({code, getString(msg, "message"), getString(msg, "hint")}));
    return;
  }
  if (t == "started") {
    if (cfg_.spec.verbose && msg.contains("containment")) out_.note("node " + link.name + ": " + getString(msg, "containment"));
    link.started = true;
    link.started_at = Clock::now();
    if (std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->started; }) &&
        phase_ == Phase::starting) {
      phase_ = Phase::running;
      noteTimings("ranks started", start_sent_at_, &Link::started_at);
      if (cfg_.spec.stdin_rank >= 0) forwardStdin();
    }
    return;
  }
  if (t == "all_exited") {
    link.all_exited = true;
    if (std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->all_exited; })) {
      if (!failed_) finish();
      else if (teardown_at_) endEventGrace();  // nobody is left to read the event
    }
    return;
  }
  if (t == "drained") {
    link.drained = true;
    if (phase_ == Phase::draining &&
        allDrained())
      finish();
    return;
  }
}

void JobSession::onInventory(Link& link, Json&& inv) {
  link.reported_at = Clock::now();
  link.inventory = std::move(inv);
  link.has_inventory = true;
  if (phase_ == Phase::connecting && static_cast<int>(links_.size()) >= cfg_.unnamed_nodes &&
      std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->has_inventory; }))
    inventoriesComplete();
}

void JobSession::noteTimings(const char* what, Clock::time_point since, Clock::time_point Link::*at) {
  std::vector<std::pair<std::string, double>> times;
  double slowest = 0;
  for (const auto& l : links_) {
    const double ms = std::chrono::duration<double, std::milli>((*l).*at - since).count();
    slowest = std::max(slowest, ms);
    times.emplace_back(l->name, ms);
  }
  outcome_.phase_seconds[what] = slowest / 1000.0;  // for --summary-json
  if (cfg_.spec.verbose) out_.note(std::string(what) + ": " + phaseTimingSummary(std::move(times)));
}

void JobSession::inventoriesComplete() {
  noteTimings("daemons reported", started_at_, &Link::reported_at);
  if (cfg_.unnamed_nodes > 0) {
    std::sort(links_.begin(), links_.end(), [](const auto& a, const auto& b) { return a->name < b->name; });
    for (size_t i = 0; i < links_.size(); ++i) links_[i]->index = static_cast<int>(i);
  }
  // Before the plan, so that these results are part of the preflight verdict, the banner and
  // --dry-run --json.
  cross_node_ = std::make_unique<CrossNodePreflight>(cfg_.spec, cfg_.plan_context, cfg_.daemon_config, reports());
  auto first = cross_node_->start();
  if (cross_node_->done()) return planAndPrepare();
  phase_ = Phase::testing_fabric;
  phase_deadline_ = Clock::now() + std::chrono::seconds(60);
  for (auto& m : first) links_[static_cast<size_t>(m.node)]->conn->send(m.msg);
}

void JobSession::onCrossNodeMessage(Link& link, const Json& msg) {
  if (phase_ != Phase::testing_fabric || !cross_node_) return;
  for (auto& m : cross_node_->onMessage(link.index, msg)) links_[static_cast<size_t>(m.node)]->conn->send(m.msg);
  if (cross_node_->done()) planAndPrepare();
}

std::vector<NodeReport> JobSession::reports() const {
  std::vector<NodeReport> out;
  for (const auto& l : links_) out.push_back({l->index, l->name, l->inventory, l->control_ip});
  return out;
}

void JobSession::planAndPrepare() {
  const std::vector<NodeReport> reports = this->reports();
  if (cross_node_) cfg_.plan_context.measured_preflight = cross_node_->items();
  if (cfg_.spec.preflight_only) {
    JobPlan checked;
    auto verdict = evaluatePreflight(cfg_.spec, reports, checked, cfg_.plan_context.measured_preflight);
    std::string text = cfg_.spec.json ? preflightToJson(checked.preflight_items).dump(2) + "\n"
                                      : renderPreflightTable(checked.preflight_items) + "\n" +
                                            "preflight: " + preflightSummary(checked.preflight_items) + "\n";
    (void)!::write(1, text.data(), text.size());
    if (!verdict) {
      failed_ = true;
      outcome_.exit_code = exitStatusFor(Errc::preflight);
    }
    finish();
    return;
  }
  auto plan = makePlan(cfg_.spec, reports, cfg_.plan_context);
  if (!plan) {
    fail(exitStatusFor(plan.error().code),
         describeError(plan.error()));
    return;
  }
  plan_ = std::move(*plan);
  for (const auto& w : plan_->warnings) out_.note("warning: " + w);
  if (cfg_.spec.dry_run) {
    std::string text = cfg_.spec.json ? planToJson(*plan_).dump(2) + "\n" : renderPlanText(*plan_);
    (void)!::write(1, text.data(), text.size());
    finish();
    return;
  }
  if (!cfg_.spec.quiet) out_.note(banner(*plan_, cfg_.spec));
  if (cfg_.spec.report_bindings) {
    out_.note("binding manifest (fingerprint " + getString(plan_->details, "fingerprint") + "):\n" +
              plan_->manifest_table);
  }
  for (const auto& n : plan_->nodes)
    for (const auto& r : n.ranks) out_.setRankNode(r.rank, n.node_name);
  outcome_.rank_exit_codes.assign(static_cast<size_t>(plan_->world_size), -1);
  rank_failures_ = std::make_unique<RankFailurePolicy>(cfg_.spec.keep_going, plan_->world_size);
  startNcclCheck();
  if (auto r = out_.openFiles(plan_->world_size); !r) {
    fail(exitStatusFor(r.error().code), r.error().message);
    return;
  }
  phase_ = Phase::preparing;
  phase_deadline_ = Clock::now() + std::chrono::seconds(30);
  prepare_sent_at_ = Clock::now();
  for (size_t i = 0; i < links_.size(); ++i)
    links_[i]->conn->send({{"t", "prepare"}, {"launch", nodeLaunchToJson(plan_->nodes[i])}});
}

std::string JobSession::banner(const JobPlan& plan, const JobSpec& spec) {
  // One line when all is well; the network decision per node (at most 4 shown) and any
  // preflight warnings otherwise worth reading before GPU hours are spent.
  std::string text = "job " + plan.job_id + ": " + std::to_string(plan.nodes.size()) + " node(s) x " +
                     std::to_string(plan.ranks_per_node) + " rank(s)" +
                     (plan.ranks_source.empty() ? "" : " (" + plan.ranks_source + ")") + ", MASTER_ADDR " + plan.master_addr + ":" +
                     std::to_string(plan.master_port);
  if (plan.details.contains("fingerprint")) text += ", binding " + plan.details["fingerprint"].get<std::string>();
  // Variables from DeepSpeed's environment files: named, since a forgotten ~/.deepspeed_env surprises.
  if (plan.details.contains("exports")) {
    std::string files;
    int count = 0;
    for (const auto& e : plan.details["exports"]) {
      const std::string src = e["source"].get<std::string>();
      const auto colon = src.rfind(':');
      if (src == "-x" || colon == std::string::npos) continue;
      ++count;
      const std::string file = src.substr(0, colon);
      if (files.find(file) == std::string::npos) files += (files.empty() ? "" : ", ") + file;
    }
    if (count > 0)
      text += "\nenvironment files: " + files + " (" + std::to_string(count) + " variable(s); --dry-run lists them)";
  }
  if (!plan.loopback && !plan.network_summary.empty()) {
    text += "\n" + plan.network_summary;
    const size_t shown = std::min<size_t>(plan.network_nodes.size(), 4);
    for (size_t i = 0; i < shown; ++i) text += plan.network_nodes[i];
    if (plan.network_nodes.size() > shown)
      text += "  ... (" + std::to_string(plan.nodes.size() - 4) + " more nodes: tlaunch --dry-run shows all)\n";
    else
      for (const auto& note : plan.network_notes) text += note;
  }
  if (spec.preflight != PreflightMode::off && !plan.preflight_text.empty() && (!plan.loopback || plan.preflight_news)) {
    if (text.back() != '\n') text += "\n";
    text += plan.preflight_text;
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void JobSession::startRanks() {
  noteTimings("nodes prepared (program found, peers reached, PMIx up)", prepare_sent_at_, &Link::prepared_at);
  start_sent_at_ = Clock::now();
  phase_ = Phase::starting;
  broadcast({{"t", "start"}});
}

void JobSession::onRankExit(Link& link, const Json& msg) {
  const int rank = static_cast<int>(getInt(msg, "r"));
  const bool signaled = getBool(msg, "signaled");
  const int code = static_cast<int>(getInt(msg, "code"));
  const bool ours = getBool(msg, "ours");
  if (rank >= 0 && static_cast<size_t>(rank) < outcome_.rank_exit_codes.size())
    outcome_.rank_exit_codes[static_cast<size_t>(rank)] = signaled ? 128 + code : code;
  pmix_directory_->onRankExit(rank);
  if (ours || (!signaled && code == 0)) return;
  std::vector<std::string> tail;
  if (msg.contains("tail") && msg["tail"].is_array())
    for (const auto& l : msg["tail"])
      if (l.is_string()) tail.push_back(l.get<std::string>());
  std::string what = signaled ? std::string("was killed by signal ") + std::to_string(code) + " (" + ::strsignal(code) + ")"
                              : "exited with status " + std::to_string(code);
  RankFailure f;
  f.rank = rank;
  f.node = link.name;
  f.exit_status = signaled ? 128 + code : code;
  f.signal = signaled ? code : 0;
  f.summary = "rank " + std::to_string(rank) + " on node " + link.name + " " + what;
  f.stderr_tail = std::move(tail);
  onRankFailed(std::move(f));
}

void JobSession::onPmixMessage(Link& link, const std::string& type, Json&& msg) {
  if (type == "abort") {
    const int rank = static_cast<int>(getInt(msg, "r"));
    const int status = static_cast<int>(getInt(msg, "status", 1));
    std::string text = getString(msg, "message");
    if (text == "N/A") text.clear();  // Open MPI's placeholder
    RankFailure f;
    f.rank = rank;
    f.node = link.name;
    f.exit_status = status == 0 ? 1 : status;
    f.called_abort = true;
    f.summary = "rank " + std::to_string(rank) + " on node " + link.name + " called MPI_Abort with status " +
                std::to_string(status) + (text.empty() ? "" : ": " + text);
    onRankFailed(std::move(f));
    return;
  }
  if (type == "fence") {
    // Every node contributes once per fence; the concatenation goes back to all of them.
    const auto seq = static_cast<uint64_t>(getInt(msg, "seq"));
    if (rank_failures_ && rank_failures_->anyFailed()) {  // a fence of the whole job: it has a failed rank
      link.conn->send({{"t", "fence_done"}, {"seq", seq}, {"ok", false}, {"lost", true}});
      return;
    }
    Fence& f = fences_[seq];
    if (f.blobs.empty()) {
      f.blobs.resize(links_.size());
      f.arrived.resize(links_.size());
    }
    const auto i = static_cast<size_t>(link.index);
    if (i >= f.arrived.size() || f.arrived[i]) return;
    f.arrived[i] = true;
    f.blobs[i] = bytesOf(msg["d"]);
    if (++f.count < links_.size()) return;
    std::string all;
    for (const auto& b : f.blobs) all += b;
    fences_.erase(seq);
    broadcast({{"t", "fence_done"}, {"seq", seq}, {"ok", true}, {"d", binary(all)}});
    return;
  }
  if (type == "dmodex_req") {
    // Ranks are node-major: the owner of rank r is node r / ranks_per_node.
    const int rank = static_cast<int>(getInt(msg, "rank"));
    const int owner = plan_ && plan_->ranks_per_node > 0 ? rank / plan_->ranks_per_node : -1;
    const bool failed = rank_failures_ && rank_failures_->hasFailed(rank);  // it may never commit its data
    if (owner < 0 || failed || owner >= static_cast<int>(links_.size()) || !links_[owner]->conn) {
      link.conn->send({{"t", "dmodex_done"}, {"id", msg["id"]}, {"ok", false}, {"d", binary("")}});
      return;
    }
    links_[owner]->conn->send({{"t", "dmodex_serve"}, {"from", link.index}, {"id", msg["id"]}, {"rank", rank}});
    return;
  }
  if (type == "dmodex_resp") {
    const auto to = getInt(msg, "to", -1);
    if (to < 0 || to >= static_cast<long long>(links_.size()) || !links_[to]->conn) return;
    links_[to]->conn->send({{"t", "dmodex_done"}, {"id", msg["id"]}, {"ok", getBool(msg, "ok")}, {"d", msg["d"]}});
  }
}

void JobSession::onLinkClosed(Link& link, const std::string& reason) {
  link.closed = true;
  if (phase_ == Phase::finishing || phase_ == Phase::done) return;
  if (phase_ == Phase::draining) {
    if (allDrained())
      finish();
    return;
  }
  // Decide a moment later: when the starter (srun after scancel, ssh after a network drop) has
  // its own explanation, it is the better one; tick() reports whichever comes first.
  if (!lost_node_) {
    lost_node_name_ = link.name;
    lost_node_ = "lost node " + link.name + ": its tlaunchd went away (" + reason +
                 "); the node may have died, or its daemon was killed";
    lost_deadline_ = Clock::now() + std::chrono::milliseconds(300);
  }
}

void JobSession::fail(int exit_code, std::string summary, int rank, std::vector<std::string> tail, std::string node,
                      int signal) {
  if (failed_) {
    endEventGrace();  // anything else that ends the job ends it now
    return;
  }
  failed_ = true;
  recordFailure(exit_code, std::move(summary), rank, std::move(tail), std::move(node), signal);
  teardown();
}

void JobSession::recordFailure(int exit_code, std::string summary, int rank, std::vector<std::string> tail,
                               std::string node, int signal) {
  outcome_.exit_code = exit_code == 0 ? 1 : exit_code;
  outcome_.summary = std::move(summary);
  outcome_.failed_rank = rank;
  outcome_.stderr_tail = std::move(tail);
  outcome_.failed_node = std::move(node);
  outcome_.signal = signal;
}

void JobSession::teardown() {
  if (phase_ == Phase::starting || phase_ == Phase::running || phase_ == Phase::preparing) {
    phase_ = Phase::draining;
    phase_deadline_ = Clock::now() + std::chrono::seconds(cfg_.spec.kill_timeout_s + 5);
    broadcast({{"t", "terminate"}, {"grace_ms", cfg_.spec.kill_timeout_s * 1000}});
    if (allDrained())
      finish();
    return;
  }
  if (phase_ != Phase::draining) finish();
}

void JobSession::finish() {
  if (phase_ == Phase::finishing || phase_ == Phase::done) return;
  phase_ = Phase::finishing;
  for (auto& l : links_) {
    if (l->conn && l->conn->isOpen()) {
      l->conn->send({{"t", "shutdown"}});
      l->conn->closeAfterFlush();
    }
  }
  for (auto& p : pending_) p->conn->close();
  if (inspector_) inspector_->close();
  asio::error_code ignore;
  acceptor_.close(ignore);
  phase_deadline_ = Clock::now() + std::chrono::seconds(3);
  // tick() stops the loop once every connection has closed (or at the deadline).
}

void JobSession::sendToNode(int node, const Json& msg) {
  if (node >= 0 && node < static_cast<int>(links_.size()) && links_[node]->conn) links_[node]->conn->send(msg);
}

// Ranks are node-major: the owner of rank r is node r / ranks_per_node.
int JobSession::nodeOfRank(int rank) const {
  if (!plan_ || plan_->ranks_per_node <= 0 || rank < 0) return -1;
  const int node = rank / plan_->ranks_per_node;
  return node < static_cast<int>(links_.size()) ? node : -1;
}

void JobSession::broadcast(const Json& msg) {
  auto frame = std::make_shared<const std::string>(encodeFrame(encodeMessage(msg)));
  for (auto& l : links_)
    if (l->conn && l->conn->isOpen()) l->conn->sendEncoded(frame);
}

void JobSession::tick() {
  const auto now = Clock::now();
  // A long gap between ticks means this process was stopped (Ctrl-Z, SIGSTOP) or starved: the
  // daemons' silence meanwhile is ours, not theirs. Their clocks start again now.
  if (last_tick_ != Clock::time_point{} && now - last_tick_ > std::chrono::seconds(3)) {
    for (auto& l : links_) l->last_heard = now;
    if (cfg_.spec.verbose) out_.note("resumed after " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - last_tick_).count()) + " s stopped");
  }
  last_tick_ = now;
  pmix_directory_->tick(now);
  pmix_collectives_->tick(now);
  // Strangers get kPendingAuthTimeout to prove the job secret, then they are dropped.
  std::erase_if(pending_, [now](const auto& p) {
    if (now - p->since < kPendingAuthTimeout) return false;
    p->conn->close();
    return true;
  });
  if (phase_ == Phase::finishing) {
    bool open = std::any_of(links_.begin(), links_.end(), [](const auto& l) { return l->conn && l->conn->isOpen(); });
    if (!open || now > phase_deadline_) {
      phase_ = Phase::done;
      signals_.cancel();
      io_.stop();
      return;
    }
  } else {
    for (const auto& f : starter_->poll()) {
      if (f.node_index >= 0 && f.node_index < static_cast<int>(links_.size()) && links_[f.node_index]->conn) continue;  // exited after connecting: the link tells
      fail(exitStatusFor(Errc::node_unreachable),
           (f.node_index >= 0 ? "could not start tlaunchd on node " + nodeLabel(f.node_index) + ": " : "") + f.message);
    }
    if (teardown_at_ && now >= *teardown_at_) endEventGrace();
    if (cfg_.spec.time_limit_s > 0 && !failed_ && now - started_at_ >= std::chrono::seconds(cfg_.spec.time_limit_s))
      fail(exitStatusFor(Errc::time_limit), "time limit of " + formatDuration(cfg_.spec.time_limit_s) +
                                                " reached (--time-limit): the job was stopped");
    if (lost_node_ && !failed_ && now >= lost_deadline_) fail(exitStatusFor(Errc::node_lost), *lost_node_, -1, {}, lost_node_name_);
    if (phase_ == Phase::connecting && now > phase_deadline_) {
      std::string missing;
      for (const auto& l : links_)
        if (!l->has_inventory) missing += (missing.empty() ? "" : ", ") + l->name;
      fail(exitStatusFor(Errc::node_unreachable),
           "these nodes' daemons did not connect within " + std::to_string(cfg_.spec.connect_timeout_s) + " s: " + missing +
               "\n  -> check that they can reach this host (" + cfg_.listen_address + ") and that tlaunchd runs there");
    } else if (phase_ == Phase::testing_fabric && now > phase_deadline_) {
      fail(exitStatusFor(Errc::node_unreachable),
           "the cross-node preflight did not finish within 60 s; still waiting for " + cross_node_->waitingFor() +
               "\n  -> check those nodes' tlaunchd and HCAs, or run with --preflight=quick");
    } else if (phase_ == Phase::preparing && now > phase_deadline_) {
      fail(exitStatusFor(Errc::node_unreachable), "nodes did not finish preparing within 30 s");
    } else if (phase_ == Phase::draining && now > phase_deadline_) {
      if (out_.backlog() > 0) {
        phase_deadline_ = now + std::chrono::seconds(1);  // a slow reader: the last lines are still coming
      } else {
        out_.note("some nodes did not confirm the end of their ranks; shutting their daemons down");
        finish();
      }
    }
    // Heartbeats: we ping every second; a daemon silent for too long is lost.
    if (now - last_ping_ >= std::chrono::seconds(1)) {
      last_ping_ = now;
      broadcast({{"t", "ping"}});
      for (auto& l : links_) {
        if (l->conn && l->conn->isOpen() && now - l->last_heard > std::chrono::seconds(cfg_.spec.heartbeat_timeout_s)) {
          l->conn->close();
          onLinkClosed(*l, "no heartbeat for " + std::to_string(cfg_.spec.heartbeat_timeout_s) + " s");
        }
      }
    }
  }
  if (inspector_) inspector_->tick(phase_ == Phase::running, out_.backlog() > 0);
  tick_timer_.expires_after(std::chrono::milliseconds(50));
  tick_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) tick();
  });
}

void JobSession::watchSignals() {
  signals_.async_wait([this](const asio::error_code& ec, int sig) {
    if (ec) return;
    handleSignal(sig);
    watchSignals();
  });
}

void JobSession::handleSignal(int sig) {
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    broadcast({{"t", "signal"}, {"sig", sig}});
    return;
  }
  if (sig == SIGQUIT && inspector_) {
    out_.note("got SIGQUIT: collecting the ranks' stacks (the job goes on)");
    inspector_->stacks([this](std::string text) {
      while (!text.empty() && text.back() == '\n') text.pop_back();
      out_.note(text);
    });
    return;
  }
  ++interrupts_;
  if (interrupts_ == 1) {
    out_.note(std::string("got ") + ::sigabbrev_np(sig) + ": ending the job (again to kill at once)");
    fail(128 + sig, std::string("tlaunch was interrupted by SIG") + ::sigabbrev_np(sig));
  } else {
    broadcast({{"t", "signal"}, {"sig", SIGKILL}});
  }
}

void JobSession::startInspector() {
  if (cfg_.spec.dry_run || cfg_.spec.preflight_only) return;
  JobInspector::Hooks hooks;
  hooks.broadcast = [this](const Json& m) { broadcast(m); };
  hooks.nodes = [this] {
    std::vector<JobInspector::NodeView> v;
    const auto now = Clock::now();
    for (const auto& l : links_)
      v.push_back({l->name, l->conn && l->conn->isOpen(), std::chrono::duration<double>(now - l->last_heard).count()});
    return v;
  };
  hooks.print = [this](const std::string& text) { out_.note(text); };
  inspector_ = std::make_unique<JobInspector>(io_, cfg_.plan_context.job_id, std::move(hooks), cfg_.spec.hang_timeout_s);
  inspector_->openControlSocket();
}

void JobSession::forwardStdin() {
  Link* target = nullptr;
  for (size_t i = 0; i < plan_->nodes.size(); ++i)
    for (const auto& r : plan_->nodes[i].ranks)
      if (r.rank == cfg_.spec.stdin_rank) target = links_[i].get();
  if (!target) return;
  stdin_ = std::make_shared<StdinCredit>(kStdinWindow);
  // A blocking reader thread: stdin may be a regular file, which epoll cannot watch. It reads
  // only as far as the rank has taken what came before (its credit), so a rank that does not
  // read its stdin holds tlaunch's reading back instead of growing a buffer on its node.
  std::thread([this, target, rank = cfg_.spec.stdin_rank, credit = stdin_] {
    std::vector<char> buf(65536);
    for (;;) {
      const size_t want = credit->take(buf.size());
      if (want == 0) return;  // the session is over
      ssize_t n = ::read(0, buf.data(), want);
      if (n < 0 && errno == EINTR) {
        credit->grant(want);
        continue;
      }
      if (n <= 0) {
        asio::post(io_, [target, rank] {  // behind the data, in the same (bulk) queue
          if (target->conn && target->conn->isOpen())
            target->conn->sendBulk(
                std::make_shared<const std::string>(encodeFrame(encodeMessage({{"t", "stdin_eof"}, {"r", rank}}))));
        });
        return;
      }
      credit->grant(want - static_cast<size_t>(n));
      asio::post(io_, [target, rank, data = std::string(buf.data(), static_cast<size_t>(n))] {
        if (target->conn && target->conn->isOpen())
          target->conn->sendBulk(std::make_shared<const std::string>(
              encodeFrame(encodeMessage({{"t", "stdin"}, {"r", rank}, {"d", binary(data)}}))));
      });
    }
  }).detach();
}

}  // namespace tlaunch
