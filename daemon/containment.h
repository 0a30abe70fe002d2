#pragma once
// Everything the ranks start ends with the job (DESIGN §2.8). Two mechanisms, the better one
// when it is available: a per-job cgroup v2 (cgroup.kill), else the daemon as child subreaper
// finding the ranks' descendants by parent links in /proc. The /proc scan runs in both cases
// (it also catches a rank that could not join the cgroup). Orphans that re-parent to the daemon
// are reaped as they exit; the ranks themselves are left to the RankSupervisor's pidfds.
// Runs on the daemon's io_context thread.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <asio.hpp>

#include "daemon/descendants.h"
#include "daemon/job_cgroup.h"

namespace tlaunch {

class Containment {
 public:
  // Once, first thing in main(), before any thread exists: makes the daemon a child subreaper
  // and blocks SIGCHLD in every thread to come (orphans' exits are read from a signalfd, so no
  // handler interrupts other threads' system calls with EINTR). False if the subreaper failed.
  static bool prepareProcess();

  // `cgroup_name`: the per-job cgroup's name (JobCgroup adds the daemon's identity). `is_rank(pid)`: the
  // supervisor's own children, which this class never reaps. `job_marks`: entries of the ranks'
  // environment ("TLAUNCH_JOB_ID=...", "TLAUNCH_NODE_RANK=...") by which the watcher finds their
  // leftovers if this daemon is killed without a cgroup (none: no watcher then).
  Containment(asio::io_context& io, const std::string& cgroup_name, std::function<bool(pid_t)> is_rank,
              const std::vector<std::string>& job_marks = {});
  ~Containment();  // SIGKILL to whatever is left, reaped, cgroup removed

  // The daemon's own children that are not the job's (the ssh sessions that start its tree
  // children): they and what they start are never reaped, signalled or counted here; their
  // owner waits for them and ends them.
  void leaveAlone(std::function<bool(pid_t)> outsider) { outsider_ = std::move(outsider); }

  // One line for `tlaunch -v`: which mechanism is in force and, for the fallback, why.
  const std::string& describe() const { return description_; }
  int cgroupProcsFd() const { return cgroup_ ? cgroup_->procsFd() : -1; }
  int cgroupDirFd() const { return cgroup_ ? cgroup_->dirFd() : -1; }

  // `sig` to every process of the job outside the ranks' own process groups in `skip_groups`
  // (they get it from the supervisor's group kill: a handler must not run twice).
  void signalOthers(int sig, const std::set<pid_t>& skip_groups);
  // SIGKILL to every process of the job, ranks included.
  void killEverything();
  // Live (non-zombie) processes of the job, ranks included.
  size_t count() const;
  // SIGTERM now, SIGKILL after `grace`, then `done` once nothing is left (or after a last bound).
  void sweep(std::chrono::milliseconds grace, std::function<void()> done);

 private:
  std::set<pid_t> jobPids(bool include_zombies) const;
  std::set<pid_t> jobPids(bool include_zombies, const std::vector<ProcEntry>& procs) const;
  size_t countIn(const std::vector<ProcEntry>& procs) const;  // count() from one look at /proc
  bool isOutsider(pid_t pid) const { return pid == watcher_pid_ || (outsider_ && outsider_(pid)); }
  std::vector<ProcEntry> jobDescendants(const std::vector<ProcEntry>& procs) const;
  void watchChildren();
  void pollChildren();
  // Reaps the zombies among the daemon's children that are not ranks, from the children files
  // (a per-SIGCHLD cost of a few files, not of every process on the node), or from a scan of all
  // of /proc where the kernel has no such files. reapOrphansIn: from a scan already made (exact).
  void reapOrphans();
  void reapOrphansIn(const std::vector<ProcEntry>& procs);
  void pollSweep(std::chrono::steady_clock::time_point kill_at, std::chrono::steady_clock::time_point give_up);

  asio::io_context& io_;
  std::function<bool(pid_t)> is_rank_;
  std::function<bool(pid_t)> outsider_;
  std::unique_ptr<JobCgroup> cgroup_;
  void startWatcher(const std::vector<std::string>& job_marks);
  pid_t watcher_pid_ = -1;   // `tlaunchd --watch-cgroup/--watch-mark`: ends the job if this daemon is killed
  int watcher_stdin_ = -1;   // its stdin: closes when this process ends, however it ends
  std::string description_;
  asio::posix::stream_descriptor sigchld_;  // a signalfd for SIGCHLD
  asio::steady_timer reap_timer_;           // where there is no signalfd: poll
  asio::steady_timer sweep_timer_;
  std::function<void()> sweep_done_;
};

}  // namespace tlaunch
