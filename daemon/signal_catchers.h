#pragma once
// Where a signal tlaunch passes on (SIGUSR1/SIGUSR2: Slurm's --signal=USR1@T, `kill -USR1` of
// tlaunch) goes in a rank's process group: to every process that catches it. A training script
// started by a wrapper (`tlaunch -- ./train.sh`, the shell not exec'ing python) gets it, while
// the shell, which would die of it, and data-loader workers, which would too, do not. When no
// process catches it, the rank's own process gets it, as srun and mpirun deliver it.
#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/descendants.h"

namespace tlaunch {

// Whether the "SigCgt:" mask of a /proc/<pid>/status text has `sig`. False when absent.
bool catchesSignal(std::string_view status_text, int sig);

// The processes of `leader`'s process group (`procs`: listProcesses()) that catch `sig`, by
// their status text (`statusOf(pid)`: "" when gone); {leader} when none does.
std::vector<pid_t> forwardTargets(pid_t leader, int sig, const std::vector<ProcEntry>& procs,
                                  const std::function<std::string(pid_t)>& statusOf);

// /proc/<pid>/status, or "" when it cannot be read.
std::string procStatus(pid_t pid);

}  // namespace tlaunch
