#pragma once
// One rank's program resolved and started (the fork/exec itself is bootstrap/spawn.h's).
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "binding/topology/apply_binding.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct RankLaunch {
  int rank = 0;
  std::string exe_path;            // resolved, absolute or relative to cwd
  std::vector<std::string> argv;   // argv[0] as the user wrote it
  std::vector<std::string> env;    // complete environment, "K=V"
  std::string cwd;
  std::optional<PreparedBinding> binding;
  bool stdin_pipe = false;         // else /dev/null
  int cgroup_procs_fd = -1;        // the job cgroup's cgroup.procs, open for writing; -1: none
  int cgroup_dir_fd = -1;          // the job cgroup's directory, to be born in it; -1: none
  int umask = -1;                  // -1: the daemon's
  long long nofile = -1;           // soft RLIMIT_NOFILE; -1: the one the daemon started with
  bool stdout_terminal = false;    // stdout a pseudo-terminal (--pty), else a pipe
  int terminal_columns = 0, terminal_rows = 0;  // its window size
};

struct RankProcess {
  pid_t pid = -1;
  int pidfd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int stdin_fd = -1;  // -1 unless stdin_pipe
};

// Where execvp would look for a program run with `env`: its PATH, even an empty one (which
// means the working directory), or the system's default path when PATH is not set at all; a
// job started from an environment without PATH must not run a program of that name that
// happens to lie in its working directory.
std::string programSearchPath(const std::vector<std::string>& env);

// The ranks' working directory on this node: there, a directory, and enterable; the error says
// which of these it is not.
Result<void> checkWorkingDirectory(const std::string& cwd, const std::string& node_name);

// Looks `program` up like execvp would, in `path` (the rank's PATH) relative to `cwd`.
// Errors name the node and say what was searched.
Result<std::string> resolveProgram(const std::string& program, const std::string& path, const std::string& cwd,
                                   const std::string& node_name);

// The rank gets pipes for stdout and stderr (and stdin if asked), its binding and cgroup, and
// consents to the daemon's gdb (`tlaunch stacks`); see bootstrap/spawn.h for the rest.
Result<RankProcess> spawnRank(const RankLaunch& launch);

}  // namespace tlaunch
