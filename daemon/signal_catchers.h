#pragma once
// Where a signal tlaunch passes on (SIGUSR1/SIGUSR2: Slurm's --signal=USR1@T, `kill -USR1` of
// tlaunch) goes in a rank's process group: to the topmost processes that catch it, those with no
// catching ancestor in the group. A training script behind a wrapper shell (`tlaunch --
// ./train.sh`, the shell not exec'ing python) gets it and the shell, which would die of it, does
// not; data-loader workers, which inherit the script's handler when forked, are left to their
// parent, and a wrapper that traps the signal to pass it on gets it alone (the script once). When
// no process catches it, the rank's own process gets it, as srun and mpirun deliver it.
#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/descendants.h"

namespace tlaunch {

// Whether the "SigCgt:" mask of a /proc/<pid>/status text has `sig`. False when absent.
bool catchesSignal(std::string_view status_text, int sig);

// The topmost processes of `leader`'s process group (`procs`: listProcesses()) that catch `sig`,
// by their status text (`statusOf(pid)`: "" when gone); {leader} when none does.
std::vector<pid_t> forwardTargets(pid_t leader, int sig, const std::vector<ProcEntry>& procs,
                                  const std::function<std::string(pid_t)>& statusOf);

// Where the teardown's SIGTERM goes in `leader`'s group. When no process catches it: the whole
// group, {-leader} (a kill(2) target). Else every member but
// - the processes below one that catches it and is no wrapper (isWrapperCommand): a training
//   script's data-loader workers are its own to end (signalled with it, they died at once and
//   torch's SIGCHLD handler raised in the middle of the checkpoint);
// - a wrapper while a program below it catches it (`bash train.sh` without exec): it would die
//   at once (bash with any EXIT trap too, which catches SIGTERM to run it), its rank would count
//   as ended and the script be swept; a wrapper that traps SIGTERM to pass it on has it done.
// `nameOf`: a process's program name (processExeName).
std::vector<pid_t> teardownTargets(pid_t leader, const std::vector<ProcEntry>& procs,
                                   const std::function<std::string(pid_t)>& statusOf,
                                   const std::function<std::string(pid_t)>& nameOf);

// /proc/<pid>/status, or "" when it cannot be read.
std::string procStatus(pid_t pid);

}  // namespace tlaunch
