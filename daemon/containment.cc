#include "daemon/containment.h"

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "bootstrap/spawn.h"
#include "daemon/descendants.h"

namespace tlaunch {

namespace {
// A watcher that is gone already (killed) must not cost its host a SIGPIPE: the daemon ignores
// it, a test program need not.
void tellWatcherCleanEnd(int fd) {
  sigset_t pipe_set;
  sigset_t before;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &before);
  if (::write(fd, &kWatcherCleanEnd, 1) < 0 && errno == EPIPE) {
    const timespec now{};
    (void)::sigtimedwait(&pipe_set, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}
}  // namespace

namespace {
// After SIGKILL a process can still take a moment (D state, a big address space to free).
constexpr auto kLastBound = std::chrono::seconds(3);
}  // namespace

bool Containment::prepareProcess() {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::pthread_sigmask(SIG_BLOCK, &chld, nullptr);  // ranks get an empty mask (rank_spawner.cc)
  return becomeSubreaper();
}

Containment::Containment(asio::io_context& io, const std::string& cgroup_name, std::function<bool(pid_t)> is_rank,
                         const std::vector<std::string>& job_marks)
    : io_(io), is_rank_(std::move(is_rank)), sigchld_(io), reap_timer_(io), sweep_timer_(io) {
  std::string why_not;
  // TLAUNCH_CONTAINMENT=subreaper forces the fallback (tests; a cgroup tree one must not touch).
  const char* forced = std::getenv("TLAUNCH_CONTAINMENT");
  if (forced && std::string(forced) == "subreaper") why_not = "TLAUNCH_CONTAINMENT=subreaper";
  else cgroup_ = JobCgroup::create(cgroup_name, why_not);
  // Without a cgroup, a daemon killed with SIGKILL leaves its ranks' leftovers to init: the
  // watcher then finds them by the marks in their environment (daemon/job_marked_processes.h).
  if (cgroup_ || !job_marks.empty()) startWatcher(job_marks);
  description_ = cgroup_ ? "containment: cgroup v2 " + cgroup_->path() + " (cgroup.kill at teardown)"
                         : "containment: child subreaper, descendants found in /proc (no per-job cgroup: " + why_not + ")";
  // /proc mounted hidepid hides the user's own processes that made themselves not dumpable (an
  // ssh-agent, a nested tlaunch): those a rank detaches cannot be found, and may outlive the job.
  if (!cgroup_ && ::geteuid() != 0) {
    std::ifstream in("/proc/self/mountinfo");
    const std::string mountinfo((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (procHidesPids(mountinfo))
      description_ += "; /proc is mounted hidepid: a detached process that is not dumpable cannot be found, a "
                      "delegated cgroup v2 would end it";
  }
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::pthread_sigmask(SIG_BLOCK, &chld, nullptr);
  const int fd = ::signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd >= 0) {
    sigchld_.assign(fd);
    watchChildren();
  } else {
    pollChildren();
  }
}

Containment::~Containment() {
  asio::error_code ignore;
  sigchld_.close(ignore);
  try {  // asio's cancel() throws on a failing epoll_ctl: the killing below must happen regardless
    reap_timer_.cancel();
    sweep_timer_.cancel();
  } catch (...) {
  }
  try {
    // One look at /proc per round (the common case is one round: nothing is left).
    const auto give_up = std::chrono::steady_clock::now() + kLastBound;
    for (;;) {
      const auto procs = listProcesses();
      reapOrphansIn(procs);
      const auto live = jobPids(false, procs);
      if ((live.empty() && !(cgroup_ && cgroup_->populated())) || std::chrono::steady_clock::now() > give_up) break;
      if (cgroup_) cgroup_->killAll();
      for (pid_t pid : live) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } catch (...) {  // out of memory listing /proc: the cgroup (if any) still kills below
  }
  try {
    cgroup_.reset();  // cgroup.kill, then rmdir
  } catch (...) {
  }
  if (watcher_stdin_ >= 0) {  // the watcher finds the cgroup gone, and exits
    tellWatcherCleanEnd(watcher_stdin_);
    ::close(watcher_stdin_);
  }
  // Reaped here, briefly: else it is a zombie of init's for as long as init takes (~2 s seen).
  for (int i = 0; watcher_pid_ > 0 && i < 200; ++i) {
    const pid_t r = ::waitpid(watcher_pid_, nullptr, WNOHANG);
    if (r == watcher_pid_ || (r < 0 && errno != EINTR)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Containment::startWatcher(const std::vector<std::string>& job_marks) {
  SpawnSpec spec;
  spec.exe = thisExecutable();
  if (spec.exe.empty()) return;
  spec.argv = {"tlaunchd"};
  if (cgroup_) {
    spec.argv.insert(spec.argv.end(), {"--watch-cgroup", cgroup_->path()});
  } else {
    for (const auto& m : job_marks) spec.argv.insert(spec.argv.end(), {"--watch-mark", m});
  }
  spec.env = environmentWith({});
  spec.stdin_mode = SpawnSpec::Stdin::pipe;
  spec.stdout_pipe = false;
  spec.stderr_pipe = false;
  spec.dies_with_parent = false;  // its whole point is to outlive a daemon killed with SIGKILL
  auto watcher = spawnProcess(spec);
  if (!watcher) return;  // then the next daemon on this node cleans up after a kill -9 (JobCgroup::create)
  watcher_pid_ = watcher->pid;
  watcher_stdin_ = watcher->stdin_fd;
  if (watcher->pidfd >= 0) ::close(watcher->pidfd);
}

std::vector<ProcEntry> Containment::jobDescendants(const std::vector<ProcEntry>& procs) const {
  return descendantsOf(::getpid(), procs, [this](pid_t pid) { return isOutsider(pid); });
}

std::set<pid_t> Containment::jobPids(bool include_zombies) const { return jobPids(include_zombies, listProcesses()); }

std::set<pid_t> Containment::jobPids(bool include_zombies, const std::vector<ProcEntry>& procs) const {
  std::set<pid_t> pids;
  for (const auto& p : jobDescendants(procs))
    if (include_zombies || p.state != 'Z') pids.insert(p.pid);
  if (cgroup_)
    for (pid_t pid : cgroup_->members()) pids.insert(pid);
  return pids;
}

void Containment::signalOthers(int sig, const std::set<pid_t>& skip_groups) {
  const auto procs = listProcesses();
  std::set<pid_t> targets;
  for (const auto& p : jobDescendants(procs))
    if (p.state != 'Z' && !skip_groups.count(p.pgid)) targets.insert(p.pid);
  if (cgroup_) {
    std::set<pid_t> in_groups;
    for (const auto& p : procs)
      if (skip_groups.count(p.pgid)) in_groups.insert(p.pid);
    for (pid_t pid : cgroup_->members()) {
      if (in_groups.count(pid)) continue;
      // Forked since the snapshot (a rank's SIGTERM handler starting its checkpoint): its own
      // group decides, or its rank's checkpoint would get the SIGTERM meant for strays.
      if (const pid_t group = ::getpgid(pid); group > 0 && skip_groups.count(group)) continue;
      targets.insert(pid);
    }
  }
  for (pid_t pid : targets) ::kill(pid, sig);
}

void Containment::killEverything() {
  if (cgroup_) cgroup_->killAll();
  for (pid_t pid : jobPids(false)) ::kill(pid, SIGKILL);
}

size_t Containment::count() const { return countIn(listProcesses()); }

size_t Containment::countIn(const std::vector<ProcEntry>& procs) const {
  size_t n = jobPids(false, procs).size();
  if (n == 0 && cgroup_ && cgroup_->populated()) n = 1;  // a member we could not see in /proc
  return n;
}

void Containment::watchChildren() {
  sigchld_.async_wait(asio::posix::stream_descriptor::wait_read, [this](const asio::error_code& ec) {
    if (ec) return;
    signalfd_siginfo info[16];
    while (::read(sigchld_.native_handle(), info, sizeof info) > 0) {
    }
    reapOrphans();
    watchChildren();
  });
}

void Containment::pollChildren() {
  reap_timer_.expires_after(std::chrono::milliseconds(500));
  reap_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    reapOrphans();
    pollChildren();
  });
}

void Containment::reapOrphans() {
  // Only zombies that are our children and not ranks: those are orphans that re-parented to us.
  if (auto children = ownChildren()) {
    int status = 0;
    for (pid_t pid : *children)
      if (!is_rank_(pid) && !(outsider_ && outsider_(pid))) ::waitpid(pid, &status, WNOHANG);  // only if ended
    return;
  }
  reapOrphansIn(listProcesses());
}

void Containment::reapOrphansIn(const std::vector<ProcEntry>& procs) {
  const pid_t self = ::getpid();
  for (const auto& p : procs) {
    if (p.ppid != self || p.state != 'Z' || is_rank_(p.pid) || (outsider_ && outsider_(p.pid))) continue;
    int status = 0;
    ::waitpid(p.pid, &status, WNOHANG);
  }
}

void Containment::sweep(std::chrono::milliseconds grace, std::function<void()> done) {
  sweep_done_ = std::move(done);
  const auto procs = listProcesses();
  reapOrphansIn(procs);
  if (countIn(procs) == 0) {
    auto d = std::move(sweep_done_);
    d();
    return;
  }
  signalOthers(SIGTERM, {});
  signalOthers(SIGCONT, {});  // a stopped one handles SIGTERM only once continued
  const auto now = std::chrono::steady_clock::now();
  pollSweep(now + grace, now + grace + kLastBound);
}

void Containment::pollSweep(std::chrono::steady_clock::time_point kill_at, std::chrono::steady_clock::time_point give_up) {
  const auto procs = listProcesses();
  reapOrphansIn(procs);
  const auto now = std::chrono::steady_clock::now();
  if (countIn(procs) == 0 || now > give_up) {
    auto d = std::move(sweep_done_);
    if (d) d();
    return;
  }
  if (now >= kill_at) killEverything();
  sweep_timer_.expires_after(std::chrono::milliseconds(50));
  sweep_timer_.async_wait([this, kill_at, give_up](const asio::error_code& ec) {
    if (!ec) pollSweep(kill_at, give_up);
  });
}

}  // namespace tlaunch
