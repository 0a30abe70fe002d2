// The session's core: its links to the daemons, the dispatch of their messages, and the life
// of the job (teardown, finish, the tick that checks every deadline). The other parts:
// job_session_accept (authentication), _plan (inventory to start), _failures, _pmix, _nccl,
// _controls (signals, stacks/status, --stdin).
#include "launcher/job_session.h"
#include "launcher/hostlist.h"
#include "launcher/job_session_link.h"

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
#include "launcher/failure_blame.h"
#include "launcher/held_signals.h"
#include "launcher/job_inspector.h"
#include "launcher/nccl/nccl_job_check.h"
#include "launcher/phase_timing.h"
#include "launcher/pmix_collectives.h"
#include "launcher/pmix_directory.h"
#include "launcher/pmix_job_control.h"
#include "launcher/pmix_spawns.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/rank_failure_policy.h"
#include "launcher/stdin_credit.h"
#include "tlaunch/diagnostics.h"
#include "tlaunch/strings.h"
#include "tlaunch/version.h"
#include "bootstrap/error_text.h"

namespace tlaunch {

JobSession::JobSession(asio::io_context& io, SessionConfig config, std::unique_ptr<DaemonStarter> starter,
                       OutputSink& out)
    : io_(io),
      cfg_(std::move(config)),
      starter_(std::move(starter)),
      out_(out),
      acceptor_(io),
      signals_(io, SIGTERM),
      tick_timer_(io),
      accept_retry_(io),
      blame_(std::make_unique<FailureBlame>()) {
  // Under nohup SIGHUP stays ignored, and a script's background command ignores Ctrl-C and
  // Ctrl-\: no session handles them (asio would set them back to SIG_DFL when the session goes).
  for (int sig : {SIGINT, SIGHUP})
    if (!cfg_.ignored_signals.has(sig)) signals_.add(sig);
  signals_.add(SIGUSR1);
  signals_.add(SIGUSR2);
  auto send = [this](int node, const Json& msg) { sendToNode(node, msg); };
  pmix_directory_ = std::make_unique<PmixDirectory>(send);
  pmix_collectives_ = std::make_unique<PmixCollectives>(
      send, [this](Json msg) { broadcast(std::move(msg)); }, [this](int rank) { return nodeOfRank(rank); }, [this] { return static_cast<int>(links_.size()); });
  if (!cfg_.ignored_signals.has(SIGQUIT)) signals_.add(SIGQUIT);  // Ctrl-\: the ranks' stacks, and the job goes on
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
  // What the frontend may have to hold for a paused reader: 4 MiB a daemon, 64 MiB in all up to
  // 256 daemons; beyond, 256 KiB each (1,000 nodes: 250 MiB), as a smaller window would make
  // every long line wait for its node's whole window to drain (a record over the window goes
  // alone, so a node can have one record of up to ~1 MiB in flight whatever its window).
  const size_t n = std::max<size_t>(1, links_.size());
  return std::clamp<size_t>((64u << 20) / n, 256u << 10, 4u << 20);
}

void JobSession::grantOutputCredit(int source, size_t bytes) {
  if (source < 0 || source >= static_cast<int>(links_.size())) return;
  sendToNode(source, {{"t", "credit"}, {"n", bytes}});
}

bool JobSession::allDrained() const {
  return std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->drained || l->closed || (!l->conn && !l->routed); });
}

std::string JobSession::nodeLabel(int index) const {
  return index >= 0 && index < static_cast<int>(links_.size()) ? links_[index]->name : "?";
}

JobOutcome JobSession::run() {
  started_at_ = Clock::now();
  if (!cfg_.in_memory)
    if (auto r = listen(); !r) return {exitStatusFor(r.error().code), r.error().message, {}, -1};
  // Output credit goes back to a daemon as its bytes leave the sink (on the sink's thread).
  // The gate closes when the session's loop ends: the sink's thread goes on writing (its
  // destructor flushes) after the io_context and this session are gone.
  auto gate = credit_gate_;
  out_.setDrained([this, gate](int source, size_t bytes) {
    std::lock_guard lk(gate->mu);
    if (gate->open) asio::post(io_, [this, source, bytes] { grantOutputCredit(source, bytes); });
  });
  if (!cfg_.in_memory) {
    accept();
    startInspector();
  }
  watchSignals();
  if (spawnsTree()) {
    tree_ = TreeShape{static_cast<int>(links_.size()), cfg_.spec.tree_radix};
    for (size_t i = 0; i < cfg_.started_by_frontend.size() && i < links_.size(); ++i)
      links_[i]->started_by_frontend = cfg_.started_by_frontend[i];
  }
  if (auto r = starter_->start(nodesToStart(), daemonCommand(), cfg_.secret); !r) {
    fail(exitStatusFor(r.error().code), describeError(r.error()));
  }
  sayStarterNotes();
  phase_deadline_ = Clock::now() + std::chrono::seconds(cfg_.spec.connect_timeout_s);
  tick();
  io_.run();
  {
    std::lock_guard lk(credit_gate_->mu);
    credit_gate_->open = false;
  }
  out_.setDrained({});
  starter_->stop(5000);  // daemons exit on their own after "shutdown"; this is for stragglers
  if (fallback_starter_) fallback_starter_->stop(1000);
  explainPeerLoss();
  return outcome_;
}

void JobSession::sayStarterNotes() {
  for (const auto& n : starter_->takeNotes())
    if ((!n.verbose_only || cfg_.spec.verbose) && !(n.banner && cfg_.spec.quiet)) out_.note(n.text);
}

bool JobSession::advance(JobEvent event) {
  const auto next = nextPhase(phase_, event);
  if (!next) return false;
  phase_ = *next;
  return true;
}

void JobSession::teardown() {
  const auto next = nextPhase(phase_, JobEvent::failed);
  if (!next) return;  // already draining or finishing
  if (*next == Phase::finishing) return finish(JobEvent::failed);
  const bool ranks_ran = phase_ == Phase::running;
  phase_ = *next;  // draining: end the ranks, collect their last output
  // Ranks that ignore SIGTERM take --kill-timeout to end: the reason is said now, not only at
  // the end (ten silent seconds look like a hang); Ctrl-C has said it already. Counted: ranks
  // that have not ended, on nodes still connected (a lost node's get no SIGTERM from us).
  const auto& codes = outcome_.rank_exit_codes;
  long running = 0;
  for (size_t i = 0; plan_ && i < plan_->nodes.size() && i < links_.size(); ++i)
    if (!links_[i]->closed)
      for (const auto& r : plan_->nodes[i].ranks)
        if (r.rank >= 0 && static_cast<size_t>(r.rank) < codes.size() && codes[static_cast<size_t>(r.rank)] == -1) ++running;
  // MPI_Comm_spawn's processes end with them (counted whatever their node: a close estimate).
  const int spawned = pmix_spawns_ ? pmix_spawns_->running() : 0;
  std::string who;  // "the 3 ranks", "the 2 ranks and 1 spawned process", "the 1 spawned process"
  if (running > 0) who = std::to_string(running) + " rank" + (running == 1 ? "" : "s");
  if (spawned > 0)
    who += (who.empty() ? "" : " and ") + std::to_string(spawned) + " spawned process" + (spawned == 1 ? "" : "es");
  if (ranks_ran && !outcome_.interrupted && running + spawned > 0 && cfg_.spec.kill_timeout_s > 0)
    out_.note("ending the job (SIGTERM to the " + who + " still running, SIGKILL after " +
              std::to_string(cfg_.spec.kill_timeout_s) + " s): " + outcome_.summary);
  phase_deadline_ = Clock::now() + std::chrono::seconds(cfg_.spec.kill_timeout_s + 5);
  broadcast({{"t", "terminate"}, {"grace_ms", cfg_.spec.kill_timeout_s * 1000}});
  if (allDrained()) finish(JobEvent::all_drained);
}

void JobSession::finish(JobEvent why) {
  if (!advance(why)) return;
  // Each daemon ends its ranks' leftovers, removes the job's files, then closes its end: the
  // connection stays open until then, so this wait covers the cleanup. Under Slurm that
  // matters: once tlaunch stops, srun's step ends and slurmstepd kills what is still running.
  broadcast({{"t", "shutdown"}});
  for (auto& p : pending_) p->conn->close();
  if (inspector_) inspector_->close();
  asio::error_code ignore;
  acceptor_.close(ignore);
  // A daemon's cleanup is bounded (2 s for the ranks' leftovers, 3 s for libpmix, 2 s to flush).
  phase_deadline_ = Clock::now() + std::chrono::seconds(7);
  // The last daemon to close its connection stops the loop (onLinkClosed); tick() at the deadline.
}

bool JobSession::stopOnceAllClosed(std::chrono::steady_clock::time_point now) {
  const bool open =
      std::any_of(links_.begin(), links_.end(), [](const auto& l) { return l->conn && l->conn->isOpen(); });
  if ((open && now <= phase_deadline_) || !advance(JobEvent::all_closed)) return false;
  // No handler of ours waits from here (starters stopping take seconds): a signal now stays
  // pending in the kernel for runJob, not queued in a signal_set about to go.
  if (cfg_.held_signals) cfg_.held_signals->hold();
  signals_.cancel();
  io_.stop();
  return true;
}

void JobSession::broadcast(Json msg) {
  // Once each to the frontend's direct children; in a tree they pass it on ("@all").
  if (tree_) msg[kEveryNodeTag] = true;
  // Sealed once for every link (bootstrap/frame_cipher.h): a fence's result of megabytes is not
  // encrypted again for each daemon.
  if (!broadcast_sealer_) broadcast_sealer_ = std::make_unique<FrameCipher>(cfg_.secret, FrameCipher::ForBroadcasts{});
  auto b = std::make_shared<Connection::Broadcast>();
  b->number = ++broadcasts_sent_;
  b->frame = broadcast_sealer_->sealBroadcast(b->number, encodeMessage(msg), kFrameHeaderBytes);
  writeFrameHeader(b->frame, b->frame.size() - kFrameHeaderBytes);
  for (auto& l : links_)
    if (l->conn && l->conn->isOpen()) l->conn->sendBroadcast(b);
}

void JobSession::tick() {
  const auto now = Clock::now();
  // A long gap between ticks means this process was stopped (Ctrl-Z, SIGSTOP) or starved: the
  // daemons' silence meanwhile is ours, not theirs. Their clocks start again now.
  if (last_tick_ != Clock::time_point{} && now - last_tick_ > std::chrono::seconds(3)) {
    for (auto& l : links_)
      if (l->last_heard != Clock::time_point{}) l->last_heard = now;  // one never heard is still starting
    if (cfg_.spec.verbose) out_.note("resumed after " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - last_tick_).count()) + " s stopped");
  }
  last_tick_ = now;
  for (const auto& text : pmix_directory_->tick(now)) out_.note(text);
  pmix_collectives_->tick(now);
  expireDirectModex(now);
  // Strangers get kPendingAuthTimeout to prove the job secret, then they are dropped.
  std::erase_if(pending_, [now](const auto& p) {
    if (now - p->since < kPendingAuthTimeout) return false;
    p->conn->close();
    return true;
  });
  if (phase_ == Phase::finishing) {
    if (stopOnceAllClosed(now)) return;
  } else {
    std::vector<StartFailure> failures = starter_->poll();
    sayStarterNotes();
    if (fallback_starter_)
      for (auto& f : fallback_starter_->poll()) failures.push_back(std::move(f));
    onStartFailures(failures, now);
    // Slurm holds the daemons back (a busy cluster): their connect clock has not started.
    if (phase_ == Phase::connecting && starter_->waitingForResources())
      phase_deadline_ = now + std::chrono::seconds(cfg_.spec.connect_timeout_s);
    if (teardown_at_ && now >= *teardown_at_) endEventGrace();
    if (cfg_.spec.time_limit_s > 0 && !failed_ && now - cfg_.time_limit_start >= std::chrono::seconds(cfg_.spec.time_limit_s))
      fail(exitStatusFor(Errc::time_limit), "time limit of " + formatDuration(cfg_.spec.time_limit_s) +
                                                " reached (--time-limit): the job was stopped");
    if (lostNodePending() && now >= lost_deadline_) failNodeLost();
    prepareFailuresDue(now);
    // Held failures wait for a pending node loss too: the lost node would explain them.
    if (blame_->due(now) && !lostNodePending()) {
      settleBlame();
      // Every rank had ended already (onAllExited left the held failures to their window):
      // nobody is left to read the failure's event.
      if (teardown_at_ && std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->all_exited; }))
        endEventGrace();
    }
    if (phase_ == Phase::connecting && now > phase_deadline_) {
      std::vector<std::string> missing;
      for (const auto& l : links_)
        if (!l->has_inventory) missing.push_back(l->name);
      // Nodes srun chooses are known once their daemon says hello: the others have no name yet.
      const size_t total = std::max(links_.size(), static_cast<size_t>(std::max(0, cfg_.unnamed_nodes)));
      const size_t unnamed = total - links_.size();
      const size_t count = missing.size() + unnamed;
      if (unnamed > 0) missing.push_back(std::to_string(unnamed) + (unnamed == 1 ? " node" : " nodes") + " srun chose");
      fail(exitStatusFor(Errc::node_unreachable),
           describeError(diagnosticError(Errc::node_unreachable, "daemons-did-not-connect",
                                         {{"count", std::to_string(count)},
                                          {"total", std::to_string(total)},
                                          {"seconds", std::to_string(cfg_.spec.connect_timeout_s)},
                                          {"nodes", joinSome(missing)},
                                          {"address", cfg_.connectAddress()}})));
    } else if (phase_ == Phase::testing_fabric && tree_waiting_ > 0 && now > phase_deadline_) {
      std::vector<std::string> waiting;
      for (const auto& l : links_)
        if (l->conn && !l->routed && tree_->parentOf(l->index) >= 0) waiting.push_back(l->name);
      fail(exitStatusFor(Errc::node_unreachable),
           describeError(diagnosticError(Errc::node_unreachable, "tree-not-wired",
                                         {{"seconds", std::to_string(kTreeWiringTimeout.count())},
                                          {"nodes", joinSome(waiting)}})));
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
        std::vector<std::string> silent;
        for (const auto& l : links_)
          if (!(l->drained || l->closed || (!l->conn && !l->routed))) silent.push_back(l->name);
        const bool one = silent.size() == 1;
        out_.note((one ? "node " : "nodes ") + compressHostlist(silent) + " did not confirm the end of " +
                  (one ? "its" : "their") + " ranks; shutting the daemons down");
        finish(JobEvent::all_drained);
      }
    }
    // Heartbeats: we ping every second; a daemon silent for too long is lost.
    if (now - last_ping_ >= std::chrono::seconds(1)) {
      last_ping_ = now;
      broadcast({{"t", "ping"}});
      for (auto& l : links_) {
        if (l->conn && l->conn->isOpen() && now - l->last_heard > std::chrono::seconds(cfg_.spec.heartbeat_timeout_s)) {
          l->conn->close();
          starter_->daemonLost(l->index);
          if (fallback_starter_) fallback_starter_->daemonLost(l->index);
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

}  // namespace tlaunch
