#include "daemon/rank_supervisor.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "daemon/oom_kills.h"
#include "daemon/rank_end_time.h"
#include "daemon/signal_catchers.h"
#include "daemon/stack_target.h"

namespace tlaunch {

RankSupervisor::RankSupervisor(asio::io_context& io, Events events, const std::string& job_name,
                               const std::vector<std::string>& job_marks)
    : io_(io), events_(std::move(events)), kill_timer_(io), spawn_timer_(io) {
  containment_ = std::make_unique<Containment>(io, "tlaunch." + job_name,
                                               [this](pid_t pid) {
                                                 for (const auto& r : ranks_)
                                                   if (r->pid == pid && !r->reaped) return true;
                                                 return false;
                                               },
                                               job_marks);
}

RankSupervisor::~RankSupervisor() {
  for (auto& r : ranks_)
    if (!r->reaped && r->pid > 0) ::kill(-r->pid, SIGKILL);
  // Reaped as they die, but never waited for without a bound: a rank in uninterruptible sleep
  // (a hung NFS or GPU driver call) ignores SIGKILL until the call returns, and the daemon must
  // still finish its teardown. One left is reaped by whoever inherits it when we exit.
  const auto give_up = std::chrono::steady_clock::now() + kReapBound;
  for (auto& r : ranks_) {
    while (!r->reaped && r->pid > 0) {
      int st = 0;
      const pid_t got = ::waitpid(r->pid, &st, WNOHANG);
      if (got == r->pid || (got < 0 && errno != EINTR)) {
        r->reaped = true;
      } else if (std::chrono::steady_clock::now() >= give_up) {
        spdlog::warn("rank {} (pid {}) did not end after SIGKILL (uninterruptible sleep?); leaving it", r->rank, r->pid);
        break;
      } else {
        ::usleep(10'000);
      }
    }
  }
  containment_.reset();  // SIGKILL to the rest of the job, reaped
}

void RankSupervisor::readStream(Rank& r, int which) {
  Stream& s = which == 1 ? r.out : r.err;
  if (!r.watched || s.eof || s.reading || s.closing || paused_) return;  // not before its batch started
  s.reading = true;
  s.fd->async_read_some(asio::buffer(*s.buf), [this, &r, which](const asio::error_code& ec, size_t n) {
    // Aborted: the supervisor (and `r` with it) may already be gone; touch nothing.
    if (ec == asio::error::operation_aborted) return;
    Stream& st = which == 1 ? r.out : r.err;
    st.reading = false;
    std::vector<OutputSegment> segments;
    if (ec) {
      st.splitter.finish(segments);
      st.eof = true;
      asio::error_code ignore;
      st.fd->close(ignore);
    } else {
      st.splitter.feed(std::string_view(st.buf->data(), n), segments);
      ++st.reads;
    }
    relay(r, which, segments);
    if (!st.eof && st.splitter.pending() > 0) showWhenQuiet(r, which);
    if (st.eof) {
      maybeReport(r);
      return;
    }
    readStream(r, which);
  });
}

void RankSupervisor::showWhenQuiet(Rank& r, int which) {
  Stream& s = which == 1 ? r.out : r.err;
  if (s.quiet_armed) return;  // it looks again when it fires
  if (!s.quiet) s.quiet = std::make_unique<asio::steady_timer>(io_);
  s.quiet_armed = true;
  s.quiet_from = s.reads;
  s.quiet->expires_after(kQuietBeforeShowing);
  s.quiet->async_wait([this, &r, which](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;  // as in readStream: touch nothing
    Stream& st = which == 1 ? r.out : r.err;
    st.quiet_armed = false;
    if (st.eof || st.splitter.pending() == 0 || st.shown_at == st.reads) return;
    if (st.reads != st.quiet_from) return showWhenQuiet(r, which);  // still writing: wait for a pause
    // Bytes waiting in the pipe: the rank wrote on and we did not read (a slow reader downstream
    // holds our output window), so it has not paused: a rank blocked in one long write() would
    // have half its line shown as a prompt. An empty pipe is the rank's own pause, read or not.
    if (int waiting = 0; ::ioctl(st.fd->native_handle(), FIONREAD, &waiting) == 0 && waiting > 0)
      return showWhenQuiet(r, which);
    st.shown_at = st.reads;
    std::vector<OutputSegment> shown{{OutputKind::unfinished, std::string(st.splitter.unfinished())}};
    relay(r, which, shown);
  });
}

void RankSupervisor::relay(Rank& r, int which, std::vector<OutputSegment>& segments) {
  if (!segments.empty()) {
    r.last_output = std::chrono::steady_clock::now();
    r.printed = true;
  }
  for (auto& seg : segments) {
    if (which == 2 && seg.kind == OutputKind::lines) rememberStderr(r, seg.bytes);
    if (events_.output) events_.output(r.rank, which, seg.kind, seg.bytes);
  }
}

void RankSupervisor::rememberStderr(Rank& r, std::string_view lines) {
  size_t start = 0;
  while (start < lines.size()) {
    size_t nl = lines.find('\n', start);
    if (nl == std::string_view::npos) nl = lines.size();
    std::string_view line = lines.substr(start, nl - start);
    if (line.size() > kTailLineBytes) {
      size_t cut = kTailLineBytes;  // not inside a UTF-8 character: the summary shows it
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xc0) == 0x80) --cut;
      line = line.substr(0, cut);
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    r.tail.emplace_back(line);
    if (r.tail.size() > kTailLines) r.tail.pop_front();
    start = nl + 1;
  }
}

namespace {
// Whether `pid` (our child) has ended, without reaping it: a zombie keeps its pid, and with it
// its process group's id, from being given to another process until maybeReport kills the group.
bool hasExited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Whether the ended child `pid` exited 0 (it is not reaped).
bool exitedZero(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid &&
         info.si_code == CLD_EXITED && info.si_status == 0;
}

}  // namespace

void RankSupervisor::watchExit(Rank& r) {
  if (!r.pidfd) return pollExit(r);  // no pidfd (very old kernel)
  r.pidfd->async_wait(asio::posix::stream_descriptor::wait_read, [this, &r](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    if (hasExited(r.pid)) return onExited(r);
    // Ended, yet not ours to wait for: a debugger that is not its parent (gdb -p, tlaunch
    // stacks) holds the zombie until it lets go. The pidfd stays readable meanwhile: waiting
    // on it again would spin a core; poll instead.
    pollExit(r);
  });
}

void RankSupervisor::pollExit(Rank& r) {
  // The timer is the rank's: destroying the supervisor cancels it, and an aborted wait touches nothing.
  if (!r.exit_poll) r.exit_poll = std::make_unique<asio::steady_timer>(io_);
  r.exit_poll->expires_after(std::chrono::milliseconds(50));
  r.exit_poll->async_wait([this, &r](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    if (hasExited(r.pid)) onExited(r);
    else pollExit(r);
  });
}

void RankSupervisor::onExited(Rank& r) {
  r.exited = true;
  // Stamped now, not at the report: the report waits for the pipes to drain.
  r.ended_us = rankEndedAtMicros(
      r.pid, std::chrono::duration_cast<std::chrono::milliseconds>(r.watched_at - r.spawned_at).count());
  // Whose failure it is is decided now: a teardown that starts while its pipes linger (below)
  // does not make a failure of its own "ours".
  r.ended_by_us = terminating_;
  if (r.pidfd) {
    asio::error_code ignore;
    r.pidfd->close(ignore);
  }
  // A descendant may still hold the pipes open; give the output a moment, then report anyway.
  if (!(r.out.eof && r.err.eof)) {
    // What is left of its process group (a filter its output goes through: `exec > >(tee
    // log)`, `| ts`; DataLoader workers; a shell's children) gets a grace first: a filter ends
    // within milliseconds once it has read the rest, and killed, it would take those last lines
    // with it. A failure's grace is short: its report must reach the frontend within the blame
    // window (launcher/failure_blame.h), ahead of the peers its death makes fail. Then the group
    // is killed, the pipes it holds close, and only a descendant that left the group (setsid) is
    // waited for. The rank is a zombie, so its pid is still the group's id.
    const auto grace = exitedZero(r.pid) ? kGroupGraceAfterSuccess : kGroupGraceAfterFailure;
    r.linger = std::make_unique<asio::steady_timer>(io_, grace);
    r.linger->async_wait([this, &r](const asio::error_code& ec) {
      if (ec) return;
      ::kill(-r.pid, SIGKILL);
      lingerForDetached(r);
    });
  }
  maybeReport(r);
}

void RankSupervisor::lingerForDetached(Rank& r) {
  r.linger->expires_after(std::chrono::seconds(1));
  r.linger->async_wait([this, &r](const asio::error_code& ec) {
    if (ec) return;
    // A read under way may have completed already (asio reads at once when data waits), its
    // handler queued: drained and closed under it, the stream would be fed after its end,
    // into a freed buffer. What is still pending is cancelled (its handler touches nothing),
    // what completed is fed first, and the rest is drained on the next turn of the loop.
    bool in_flight = false;
    for (Stream* s : {&r.out, &r.err}) {
      if (s->eof) continue;
      s->closing = true;
      if (s->reading) {
        asio::error_code ignore;
        s->fd->cancel(ignore);
        in_flight = true;
      }
    }
    if (!in_flight) return endLingering(r);
    r.linger->expires_after(std::chrono::seconds(0));  // completes behind what is queued now
    r.linger->async_wait([this, &r](const asio::error_code& again) {
      if (!again) endLingering(r);
    });
  });
}

void RankSupervisor::endLingering(Rank& r) {
  for (Stream* s : {&r.out, &r.err}) {
    if (s->eof) continue;
    std::vector<OutputSegment> rest;
    // What the rank wrote before it ended is still in the pipe when its reading was paused (a
    // slow reader, a stopped frontend): its last lines, often the traceback the summary
    // quotes. Taken now, bounded, whatever the pause: the pipe holds little.
    drainExited(*s, rest);
    s->splitter.finish(rest);
    relay(r, s == &r.out ? 1 : 2, rest);
    s->eof = true;
    asio::error_code ignore;
    s->fd->close(ignore);
  }
  maybeReport(r);
}

void RankSupervisor::drainExited(Stream& s, std::vector<OutputSegment>& segments) {
  asio::error_code ec;
  s.fd->non_blocking(true, ec);
  if (ec) return;
  // A descendant that keeps writing could keep the pipe full: take at most a bound.
  for (size_t taken = 0; taken < kExitDrainLimit;) {
    const size_t n = s.fd->read_some(asio::buffer(*s.buf), ec);
    if (ec) return;  // would block (the pipe is empty), end of file, or an error: done
    s.splitter.feed(std::string_view(s.buf->data(), n), segments);
    taken += n;
  }
}

void RankSupervisor::maybeReport(Rank& r) {
  if (r.reported || !r.exited || !r.out.eof || !r.err.eof) return;
  r.reported = true;
  r.out.buf.reset();  // both pipes are at their end: nothing reads into them again
  r.err.buf.reset();
  if (r.linger) r.linger->cancel();
  stdinGone(r);
  // Whatever the rank left behind in its process group goes with it. The rank is still a
  // zombie here, so its pid (the group's id) cannot have been given to another process.
  ::kill(-r.pid, SIGKILL);
  int st = 0;
  while (::waitpid(r.pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.wait_status = st;
  r.reaped = true;
  RankExit e;
  e.rank = r.rank;
  if (WIFSIGNALED(r.wait_status)) {
    e.signaled = true;
    e.code = WTERMSIG(r.wait_status);
  } else {
    e.code = WEXITSTATUS(r.wait_status);
  }
  e.killed_by_us = r.ended_by_us;
  e.ended_us = r.ended_us;
  if (e.signaled && e.code == SIGKILL && !e.killed_by_us && oom_kills_at_start_)
    if (const auto now = oomKillCount(); now && *now > *oom_kills_at_start_) e.oom_killer_ran = true;
  e.stderr_tail.assign(r.tail.begin(), r.tail.end());
  ++reported_;
  if (events_.exited) events_.exited(e);
  if (reported_ == ranks_.size() && batches_.empty()) sayAllExited();  // else once they started (finishBatch)
}

void RankSupervisor::sayAllExited() {
  all_exited_said_for_ = ranks_.size();
  kill_timer_.cancel();
  if (events_.all_exited) events_.all_exited();
}

void RankSupervisor::signalAll(int sig, bool whole_group) {
  std::set<pid_t> groups;
  // SIGUSR1/SIGUSR2 passed on go to the topmost processes of each rank's group that catch them
  // (signal_catchers.h); other signals to one process (PMIx_Job_control) to the rank's own.
  // The teardown's SIGTERM: to the processes that catch it, else the group (teardownTargets).
  const bool to_catchers = !whole_group && (sig == SIGUSR1 || sig == SIGUSR2);
  const bool teardown = whole_group && sig == SIGTERM;
  const std::vector<ProcEntry> procs = to_catchers || teardown ? listProcesses() : std::vector<ProcEntry>{};
  for (auto& r : ranks_) {
    groups.insert(r->pid);
    if (r->exited) continue;
    if (teardown) {
      for (pid_t target : teardownTargets(r->pid, procs, procStatus, processExeName)) ::kill(target, sig);
      continue;
    }
    if (!to_catchers) {
      ::kill(whole_group ? -r->pid : r->pid, sig);
      continue;
    }
    for (pid_t target : forwardTargets(r->pid, sig, procs, procStatus)) ::kill(target, sig);
  }
  // Teardown reaches what left the ranks' groups too (setsid, a double fork).
  if (whole_group) containment_->signalOthers(sig, groups);
}

bool RankSupervisor::signalRank(int rank, int sig) {
  for (auto& r : ranks_)
    if (r->rank == rank && !r->exited) return ::kill(sig == SIGKILL ? -r->pid : r->pid, sig) == 0;
  return false;
}

void RankSupervisor::terminate(std::chrono::milliseconds grace) {
  if (terminating_) return;
  terminating_ = true;
  signalAll(SIGTERM);
  // A stopped rank (Ctrl-Z in it, PMIx job control, a debugger let go) would hold SIGTERM
  // pending until SIGKILL: continued, its handler runs within the grace like everyone's.
  signalAll(SIGCONT);
  kill_timer_.expires_after(grace);
  kill_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) killAll();
  });
}

void RankSupervisor::killAll() {
  terminating_ = true;
  signalAll(SIGKILL);
  containment_->killEverything();
}

void RankSupervisor::sweepLeftovers(std::chrono::milliseconds grace, std::function<void()> done) {
  // `done` may destroy this supervisor: run it from the io_context, never inside the sweep.
  containment_->sweep(grace, [this, done = std::move(done)] { asio::post(io_, done); });
}

void RankSupervisor::pauseOutput() { paused_ = true; }

void RankSupervisor::resumeOutput() {
  if (!paused_) return;
  paused_ = false;
  for (auto& r : ranks_) {
    readStream(*r, 1);
    readStream(*r, 2);
  }
}

std::vector<RankSupervisor::View> RankSupervisor::view() const {
  std::vector<View> out;
  for (const auto& r : ranks_) out.push_back({r->rank, r->pid, r->exited, r->last_output, r->printed});
  return out;
}

size_t RankSupervisor::alive() const {
  size_t n = 0;
  for (const auto& r : ranks_) n += r->exited ? 0 : 1;
  return n;
}

}  // namespace tlaunch
