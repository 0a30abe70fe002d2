#pragma once
// `tlaunch stacks` of a rank that only wraps its program (`bash train.sh`, `env A=1 python`,
// `timeout 1h python`, `numactl ... python`): gdb on the wrapper shows a shell waiting for its
// child, not where the job is. The stacks are taken of the process the wrapper runs instead,
// down a chain of wrappers that each run exactly one live process. Pure: names come from the
// caller (/proc/<pid>/comm).
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "daemon/descendants.h"

namespace tlaunch {

struct StackTarget {
  pid_t pid = 0;
  std::string wrapper;  // the rank's own command when it was followed ("bash"); "" when none
  std::string program;  // the command of `pid` when a wrapper was followed ("python3")
};

// Whether a command (its comm) only starts and waits for another: shells, env, timeout, nice...
bool isWrapperCommand(const std::string& comm);

// The process whose stacks stand for the rank `rank`: the rank itself, unless it is a wrapper
// with exactly one live child, and so on down. `procs`: every process (listProcesses).
StackTarget stackTargetOf(pid_t rank, const std::vector<ProcEntry>& procs,
                          const std::function<std::string(pid_t)>& comm_of);

// /proc/<pid>/comm without its newline; "" when the process is gone.
std::string processComm(pid_t pid);

}  // namespace tlaunch
