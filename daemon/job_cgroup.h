#pragma once
// A per-job cgroup v2 below the daemon's own, where the daemon may create one (a delegated,
// writable subtree: root, a systemd Delegate=yes unit, Slurm's proctrack/cgroup step). Ranks are
// born inside (clone3 with CLONE_INTO_CGROUP; where the kernel refuses that, they move in
// between fork and exec by writing "0" to cgroup.procs), so everything they start is inside
// too, and cgroup.kill ends all of it at once, whatever re-parenting happened.
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace tlaunch {

class JobCgroup {
 public:
  // Creates <the daemon's cgroup>/<prefix>.<pid-namespace inode>-<pid>-<start time>; nullptr,
  // with the reason in `why_not`, where cgroup v2 is not mounted, the daemon's cgroup is not
  // writable, or the kernel lacks cgroup.kill (before 5.14). First removes the cgroups of this
  // user's daemons (same pid namespace) that are gone (kill -9, the OOM killer), killing what
  // the dead daemon's ranks left inside.
  static std::unique_ptr<JobCgroup> create(const std::string& prefix, std::string& why_not);
  ~JobCgroup();  // kills what is left, then removes the directory
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& path() const { return path_; }
  int procsFd() const { return procs_fd_; }  // cgroup.procs, open for writing (close-on-exec)
  int dirFd() const { return dir_fd_; }      // the directory itself, for CLONE_INTO_CGROUP
  std::vector<pid_t> members() const;
  bool killAll() const;     // cgroup.kill: SIGKILL to every member, atomically
  bool populated() const;   // cgroup.events: a live process is still inside
  bool remove();            // rmdir; false while a process is inside

 private:
  JobCgroup(std::string path, int procs_fd, int dir_fd) : path_(std::move(path)), procs_fd_(procs_fd), dir_fd_(dir_fd) {}
  std::string path_;
  int procs_fd_ = -1;
  int dir_fd_ = -1;
  bool removed_ = false;
};

// The daemon's own cgroup v2 directory ("" when there is none), from /proc/self/cgroup and
// /proc/self/mountinfo.
std::string ownCgroupV2Dir();

// cgroup.kill, a bounded wait for the members to go, rmdir.
void killAndRemoveCgroup(const std::string& path);

// `tlaunchd --watch-cgroup PATH` or `--watch-mark K=V ...`: a daemon killed with SIGKILL (the OOM
// killer, kill -9) cannot end its job's processes; this watcher, its child with no death signal,
// waits for the daemon's end of its stdin to close and then does: the cgroup's members, or
// without a cgroup the processes that carry every mark (daemon/job_marked_processes.h). After a
// clean teardown nothing is left to end: the daemon writes kWatcherCleanEnd first. 0 after a
// clean end, 1 when the daemon died (its job's files are left too).
inline constexpr char kWatcherCleanEnd = 'c';
int watchJobForParent(const std::string& cgroup_path, const std::vector<std::string>& marks);

}  // namespace tlaunch
