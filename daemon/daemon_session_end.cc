// How a tlaunchd ends: its ranks' end reported (or ended on its own: a signal, the frontend
// lost), its own cleanup bounded, the connection closed last, so that the frontend's wait for
// the daemon covers the cleanup.
#include "daemon/daemon_session.h"

#include <signal.h>

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "daemon/output_channel.h"
#include "daemon/tree_children.h"

namespace tlaunch {

namespace {
// How long after SIGKILL the daemon waits for ranks it ends on its own (endOwnRanks).
constexpr std::chrono::seconds kUnkillableBound{10};
}  // namespace

void DaemonSession::onRanksEnded() {
  // A spawn prepared here waits for its start: the namespace must stay registered, and the
  // processes it adds will end (and be reported) later.
  if (!spawn_launches_.empty() && !draining_ && !lost_ && !signalled_code_) {
    ranks_ended_while_spawning_ = true;
    return;
  }
  ranks_ended_while_spawning_ = false;
  // The PMIx server is torn down at shutdown, after the frontend has this node's outcome:
  // libpmix 4.2.2 can crash while it deregisters a job whose clients' last messages it is
  // still handling (a use after free in its progress thread, seen on a loaded node), and a
  // daemon that dies before "all_exited" leaves would cost a finished job its success.
  const bool tell = conn_ && conn_->isOpen() && !lost_;
  if (tell) output_->ordered({{"t", draining_ ? "drained" : "all_exited"}});
  // Signalled (scancel, a node shutting down): its ranks' end is known and said above; the
  // frontend ends the job on its "signalled" report, and this daemon goes once what its ranks
  // wrote last (and that report) has left: behind a slow reader it waits for the frontend's
  // credit, for a bounded while (Slurm's KillWait is 30 s by default).
  if (signalled_code_ && tell) return shutdownAfterOutput(std::chrono::steady_clock::now() + kSignalledOutputWait);
  if (lost_ || signalled_code_) shutdown(signalled_code_ ? signalled_code_ : 1);
}

void DaemonSession::shutdownAfterOutput(std::chrono::steady_clock::time_point deadline) {
  if (done_) return;
  if (!output_ || output_->empty() || !conn_ || !conn_->isOpen() || std::chrono::steady_clock::now() >= deadline)
    return shutdown(signalled_code_);
  exit_timer_.expires_after(std::chrono::milliseconds(20));
  exit_timer_.async_wait([this, deadline](const asio::error_code& ec) {
    if (!ec) shutdownAfterOutput(deadline);
  });
}

void DaemonSession::handleTerminate(const Json& msg) {
  draining_ = true;
  if (!ranks_ || ranks_->allExited()) {
    if (output_) output_->ordered({{"t", "drained"}});
    else conn_->send({{"t", "drained"}});
    return;
  }
  const std::chrono::milliseconds grace(getInt(msg, "grace_ms", 10000));
  if (!kill_at_) kill_at_ = std::chrono::steady_clock::now() + grace;
  stopStacks();
  ranks_->terminate(grace);
}

void DaemonSession::onClose(const std::string& reason) {
  if (done_) return;
  if (!authenticated_ && std::chrono::steady_clock::now() < connect_deadline_) {
    // Closed before we could prove the secret: the frontend makes room among connections not
    // yet authenticated when strangers flood its port (bootstrap/stranger_eviction.h), and
    // ours was chosen. Nothing of the job is lost yet: connect again, backing off, until
    // --connect-timeout, when tlaunch gives up on this node anyway (a frontend that is gone
    // refuses the connection).
    const auto backoff = std::chrono::milliseconds(50 << std::min(early_closes_++, 5));  // 50 ms .. 1.6 s
    if (early_closes_ <= 3 || early_closes_ % 10 == 0)
      spdlog::warn("{} closed the connection before authentication ({}); connecting again", upstreamName(), reason);
    challenge_timer_.cancel();
    server_nonce_.clear();
    conn_->close();
    auto t = std::make_shared<asio::steady_timer>(io_, backoff);
    t->async_wait([this, t](const asio::error_code&) {
      if (!done_) connect(0);
    });
    return;
  }
  frontendLost(reason);
}

std::chrono::milliseconds DaemonSession::ownTeardownGrace() const {
  return std::chrono::milliseconds(launch_ ? launch_->kill_timeout_ms : 2000);
}

void DaemonSession::frontendLost(const std::string& why) {
  if (lost_ || done_) return;
  lost_ = true;
  spdlog::error("lost the frontend ({}); ending this node's ranks", why);
  if (conn_) conn_->close();
  tree_->closeAll();  // the nodes below lose their way to the frontend too: they end theirs now
  if (ranks_ && !ranks_->allExited()) {
    // tlaunch killed (the OOM killer on a login node), its host or link gone: the ranks' SIGTERM
    // checkpoint gets --kill-timeout as in any teardown; it was cut to 2 s. Nothing waits for
    // this daemon meanwhile, and it ends with its ranks.
    return endOwnRanks(ownTeardownGrace());  // all_exited → shutdown
  }
  shutdown(1);
}

void DaemonSession::stopOnSignal(int sig) {
  // A control frame, so it leaves ahead of the exits of the ranks this signal is about to end.
  if (!done_ && authenticated_ && conn_ && conn_->isOpen()) conn_->send({{"t", "signalled"}, {"sig", sig}});
  // SIGTERM first, as scancel and a user's kill mean it: the ranks' handlers (a checkpoint)
  // get --kill-timeout before SIGKILL. Repeats do not cut it short (daemon/main.cc).
  if (!done_ && !signalled_code_ && ranks_ && !ranks_->allExited()) {
    signalled_code_ = 128 + sig;
    return endOwnRanks(ownTeardownGrace());  // all_exited → onRanksEnded → shutdown
  }
  shutdown(128 + sig);
}

void DaemonSession::forwardSignal(int sig) {
  if (ranks_ && !done_) ranks_->signalAll(sig, /*whole_group=*/false);
}

void DaemonSession::endOwnRanks(std::chrono::milliseconds grace) {
  // When the frontend's teardown began it, its grace (--kill-timeout: a checkpoint) stands.
  if (!kill_at_) {
    kill_at_ = std::chrono::steady_clock::now() + grace;
    ranks_->terminate(grace);
  }
  // A rank SIGKILL does not end (asleep in a driver or on NFS, or a zombie a debugger holds)
  // would keep this daemon for ever, with nobody left to end it.
  give_up_timer_.expires_at(*kill_at_ + kUnkillableBound);
  give_up_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec || done_) return;
    spdlog::error("this node's ranks have not ended {} s after SIGKILL (asleep in the kernel, or held by a debugger); "
                  "the daemon exits without them",
                  kUnkillableBound.count());
    shutdown(signalled_code_ ? signalled_code_ : 1);
  });
}

void DaemonSession::shutdown(int code) {
  if (done_) return;
  done_ = true;
  exit_code_ = code;
  heartbeat_timer_.cancel();
  challenge_timer_.cancel();
  attach_timer_.cancel();
  give_up_timer_.cancel();
  tree_->expectEnd();
  asio::error_code ignore;
  probe_acceptor_.close(ignore);
  probe_retry_.cancel();
  if (ranks_ && !ranks_->allExited()) ranks_->killAll();
  // Off the current handler (it may be one of the supervisor's): reap what is left, tear the
  // PMIx server down and remove the job's files, and only then close the connection, so that
  // the frontend's wait for our exit covers the cleanup.
  asio::post(io_, [this] {
    auto finish = [this] {
      ranks_.reset();
      nccl_.reset();  // its timer, and the per-rank NCCL logs
      pmix_.reset();
      // The nodes below clean up as this one did; the frontend's wait for the tree covers
      // theirs only while this connection stays open.
      awaitChildren(std::chrono::steady_clock::now() + std::chrono::seconds(4), [this] {
        tree_->closeAll();
        if (spawner_) spawner_->stop(500);  // their daemons are gone: their ssh sessions end
        if (conn_ && conn_->isOpen()) conn_->closeAfterFlush();
        waitForFlush(std::chrono::steady_clock::now() + std::chrono::seconds(2));
      });
    };
    if (!ranks_) return finish();
    // What the ranks started and left running (a setsid'ed server) ends with the job. The
    // frontend waits ~3 s for our exit, so the grace here is short.
    const int grace_ms = launch_ ? std::min(launch_->kill_timeout_ms, 2000) : 2000;
    ranks_->sweepLeftovers(std::chrono::milliseconds(grace_ms), finish);
  });
}

void DaemonSession::awaitChildren(std::chrono::steady_clock::time_point deadline, std::function<void()> then) {
  if (tree_->openChildren() == 0 || std::chrono::steady_clock::now() >= deadline) return then();
  exit_timer_.expires_after(std::chrono::milliseconds(10));
  exit_timer_.async_wait([this, deadline, then = std::move(then)](const asio::error_code&) mutable {
    awaitChildren(deadline, std::move(then));
  });
}

void DaemonSession::waitForFlush(std::chrono::steady_clock::time_point deadline) {
  // Let the last frames leave, then stop regardless.
  if (!conn_ || !conn_->isOpen() || std::chrono::steady_clock::now() >= deadline) {
    io_.stop();
    return;
  }
  exit_timer_.expires_after(std::chrono::milliseconds(5));
  exit_timer_.async_wait([this, deadline](const asio::error_code&) { waitForFlush(deadline); });
}

}  // namespace tlaunch
