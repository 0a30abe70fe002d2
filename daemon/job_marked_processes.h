#pragma once
// A node's share of a job found by the marks every rank carries in its environment
// (TLAUNCH_JOB_ID and TLAUNCH_NODE_RANK: simulated nodes share a host), for the one case parent
// links cannot cover: the daemon killed with SIGKILL where no per-job cgroup exists. Its ranks'
// leftovers (setsid, a double fork) then re-parent to init, and the daemon's watcher
// (`tlaunchd --watch-mark`, daemon/job_cgroup.h) finds them by the marks. A process that
// cleared or replaced its environment escapes them: best effort, and the README says so.
#include <sys/types.h>

#include <string>
#include <vector>

#include "tlaunch/node_launch.h"

namespace tlaunch {

// The marks of a node's share of a job: its ranks' TLAUNCH_JOB_ID and TLAUNCH_NODE_RANK, as
// the frontend put them in their environment (none for a node without ranks).
std::vector<std::string> jobMarksOf(const NodeLaunch& launch);

// Processes under `proc_root` owned by `uid` whose initial environment holds every one of
// `entries` ("K=V", exactly), `self` left out. Unreadable ones (another user's, gone meanwhile)
// are skipped; no entries, no processes.
std::vector<pid_t> processesWithEnvironmentEntries(const std::vector<std::string>& entries, uid_t uid, pid_t self,
                                                   const std::string& proc_root = "/proc");

// SIGKILL to every process of this user that carries all of `marks`, again until none is left
// or about 2 s have passed.
void killMarkedProcesses(const std::vector<std::string>& marks);

}  // namespace tlaunch
