#include "daemon/stack_target.h"

#include <unistd.h>

#include <array>
#include <string_view>

namespace tlaunch {

bool isWrapperCommand(const std::string& name) {
  // Shells, and what forks its program instead of exec'ing it (env, nice, numactl... exec it:
  // they are never a parent, but cost nothing here).
  static constexpr std::array<std::string_view, 18> kWrappers = {
      "sh",     "bash",    "dash",    "zsh",    "ksh",   "mksh", "busybox", "env",  "timeout",
      "nice",   "ionice",  "numactl", "taskset", "stdbuf", "nohup", "chrt", "setsid", "time"};
  for (auto w : kWrappers)
    if (name == w) return true;
  return false;
}

StackTarget stackTargetOf(pid_t rank, const std::vector<ProcEntry>& procs,
                          const std::function<std::string(pid_t)>& name_of) {
  StackTarget t{rank, "", ""};
  const std::string own = name_of(rank);
  pid_t at = rank;
  // A bound on the chain (a shell running a shell ...), not on any job's depth that matters.
  for (int depth = 0; depth < 16 && isWrapperCommand(depth == 0 ? own : name_of(at)); ++depth) {
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
  t.program = name_of(at);
  return t;
}

std::string processExeName(pid_t pid) {
  std::array<char, 4096> exe{};
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe.data(), exe.size() - 1);
  if (n <= 0) return "";
  std::string path(exe.data(), static_cast<size_t>(n));
  if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);  // replaced on disk since it started
  return path.substr(path.rfind('/') + 1);
}

}  // namespace tlaunch
