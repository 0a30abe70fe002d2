// RankSupervisor's starting of ranks: in slices of kSpawnSlice, with the event loop running
// between them. A fork and exec costs milliseconds (more on a loaded node, or from a big
// daemon), so a node of 1,000 ranks starts for seconds: its heartbeats, the frontend's messages
// (a terminate) and the first ranks' output must not wait for the last rank. Batches (the job's
// ranks, then PMIx_Spawn's) start one after the other, in order.
#include "daemon/rank_supervisor.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>

#include "daemon/oom_kills.h"

namespace tlaunch {

void RankSupervisor::start(std::vector<RankLaunch> launches, Started done) {
  oom_kills_at_start_ = oomKillCount();
  queueBatch(std::move(launches), true, std::move(done));
}

void RankSupervisor::add(std::vector<RankLaunch> launches, Started done) {
  queueBatch(std::move(launches), false, std::move(done));
}

void RankSupervisor::queueBatch(std::vector<RankLaunch> launches, bool is_start, Started done) {
  Batch b;
  b.launches = std::move(launches);
  b.is_start = is_start;
  b.done = std::move(done);
  batches_.push_back(std::move(b));
  if (batches_.size() == 1) spawnLater();
}

void RankSupervisor::spawnLater() {
  // `done` runs from the event loop, never inside start()/add(): the caller's state is settled.
  spawn_timer_.expires_after(std::chrono::milliseconds(0));
  spawn_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;  // cancelled: the supervisor may be gone
    spawnSlice();
  });
}

void RankSupervisor::spawnSlice() {
  const auto slice_end = std::chrono::steady_clock::now() + kSpawnSlice;
  while (!batches_.empty()) {
    Batch& b = batches_.front();
    // A terminate() before or meanwhile: what started is supervised (and ends as ours), the rest
    // never starts; a spawn of which nothing started did not start.
    if (terminating_ && !b.is_start && b.next == 0 && !b.launches.empty()) {
      finishBatch(fail(Errc::internal, "the job is ending: no more ranks are started"));
      continue;
    }
    if (b.next == b.launches.size() || terminating_) {
      finishBatch({});
      continue;
    }
    if (std::chrono::steady_clock::now() >= slice_end) {
      spawnLater();
      return;
    }
    if (b.next == 0) b.first = ranks_.size();
    RankLaunch& l = b.launches[b.next++];
    l.cgroup_procs_fd = containment_->cgroupProcsFd();
    l.cgroup_dir_fd = containment_->cgroupDirFd();
    auto p = spawnRank(l);
    if (!p) {
      finishBatch(tl::unexpected(p.error()));
      continue;
    }
    auto r = std::make_unique<Rank>();
    r->rank = l.rank;
    r->pid = p->pid;
    r->last_output = r->spawned_at = std::chrono::steady_clock::now();
    if (p->stdin_fd >= 0) r->stdin_fd = std::make_unique<asio::posix::stream_descriptor>(io_, p->stdin_fd);
    r->out.fd = std::make_unique<asio::posix::stream_descriptor>(io_, p->stdout_fd);
    r->err.fd = std::make_unique<asio::posix::stream_descriptor>(io_, p->stderr_fd);
    if (p->pidfd >= 0) r->pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, p->pidfd);
    ranks_.push_back(std::move(r));
  }
}

void RankSupervisor::finishBatch(Result<void> result) {
  Batch b = std::move(batches_.front());
  batches_.pop_front();
  const size_t first = b.next == 0 ? ranks_.size() : b.first;
  if (!result) {
    // None of this batch has been watched yet: end them here, as if never started.
    for (size_t i = first; i < ranks_.size(); ++i) {
      ::kill(-ranks_[i]->pid, SIGKILL);
      int st = 0;
      while (::waitpid(ranks_[i]->pid, &st, 0) < 0 && errno == EINTR) {
      }
    }
    ranks_.resize(first);
    if (b.is_start) killAll();  // the job's start failed: nothing of it goes on
  }
  for (size_t i = first; i < ranks_.size(); ++i) {
    ranks_[i]->watched = true;
    ranks_[i]->watched_at = std::chrono::steady_clock::now();
    readStream(*ranks_[i], 1);
    readStream(*ranks_[i], 2);
    watchExit(*ranks_[i]);
    watchStdinReader(*ranks_[i]);
  }
  if (b.done) b.done(std::move(result));
  // Every rank has ended (while this batch started, or none of it runs): said now, once for
  // these ranks (a failed spawn after the end was said says nothing new).
  if (batches_.empty() && reported_ == ranks_.size() && all_exited_said_for_ != ranks_.size()) sayAllExited();
}

}  // namespace tlaunch
