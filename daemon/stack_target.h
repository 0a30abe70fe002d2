#pragma once
// `tlaunch stacks` of a rank that only wraps its program (`bash train.sh`, `env A=1 python`,
// `timeout 1h python`, `numactl ... python`): gdb on the wrapper shows a shell waiting for its
// child, not where the job is. The stacks are taken of the process the wrapper runs instead,
// down a chain of wrappers that each run exactly one live process. Pure: names come from the
// caller (the name of /proc/<pid>/exe: `./train.sh` is a bash too).
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "daemon/descendants.h"

namespace tlaunch {

struct StackTarget {
  pid_t pid = 0;
  std::string wrapper;  // the rank's own program when it was followed ("bash"); "" when none
  std::string program;  // the program of `pid` when a wrapper was followed ("python3.11")
};

// Whether a program (its file name) only starts and waits for another: shells, timeout, time...
bool isWrapperCommand(const std::string& name);

// The process whose stacks stand for the rank `rank`: the rank itself, unless it is a wrapper
// with exactly one live child, and so on down. `procs`: every process (listProcesses).
StackTarget stackTargetOf(pid_t rank, const std::vector<ProcEntry>& procs,
                          const std::function<std::string(pid_t)>& name_of);

// The file name of /proc/<pid>/exe ("bash", "python3.11"); "" when it cannot be read.
std::string processExeName(pid_t pid);

}  // namespace tlaunch
