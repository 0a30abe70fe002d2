#include "daemon/stack_target.h"

#include <array>
#include <fstream>
#include <string_view>

namespace tlaunch {

bool isWrapperCommand(const std::string& comm) {
  static constexpr std::array<std::string_view, 17> kWrappers = {
      "sh",   "bash",    "dash",    "zsh",    "ksh",   "mksh",  "env",   "timeout", "nice",
      "ionice", "numactl", "taskset", "stdbuf", "nohup", "chrt", "setsid", "time"};
  for (auto w : kWrappers)
    if (comm == w) return true;
  return false;
}

StackTarget stackTargetOf(pid_t rank, const std::vector<ProcEntry>& procs,
                          const std::function<std::string(pid_t)>& comm_of) {
  StackTarget t{rank, "", ""};
  const std::string own = comm_of(rank);
  pid_t at = rank;
  // A bound on the chain (a shell running a shell ...), not on any job's depth that matters.
  for (int depth = 0; depth < 16 && isWrapperCommand(depth == 0 ? own : comm_of(at)); ++depth) {
    pid_t only = 0;
    int live = 0;
    for (const auto& p : procs)
      if (p.ppid == at && p.state != 'Z') {
        only = p.pid;
        ++live;
      }
    if (live != 1) break;  // waiting for nothing (a builtin's sleep), or for several: the wrapper stands
    at = only;
  }
  if (at == rank) return t;
  t.pid = at;
  t.wrapper = own;
  t.program = comm_of(at);
  return t;
}

std::string processComm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

}  // namespace tlaunch
