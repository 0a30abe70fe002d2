#pragma once
// The one fork/exec of tlaunch: ranks (daemon/rank_spawner) and the frontend's helpers (ssh,
// srun, a local tlaunchd: launcher/child_process) both start here. Everything the child needs
// is built before fork; between fork and exec the child makes only async-signal-safe calls
// (DESIGN §8). The child:
// - is its own process group leader and dies with its parent (PR_SET_PDEATHSIG SIGKILL, checked
//   against a parent that died before the child got there);
// - gets default signal dispositions, an empty mask, the user's own RLIMIT_NOFILE back, and no
//   descriptor of ours but its three standard ones (a control socket that leaked into a child
//   would keep a dead node looking alive);
// - reports an exec failure (or a failed set-up step) through a close-on-exec pipe, so the
//   caller gets an error naming the program instead of a mysterious exit status 127.
#include <sys/types.h>

#include <string>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

struct SpawnSpec {
  std::string exe;                // the file to exec: a path, or a name looked up in PATH if search_path
  bool search_path = false;       // execvpe semantics (the frontend's ssh/srun)
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  std::vector<std::string> env;   // the complete environment, "K=V"
  std::string cwd;                // empty: the parent's
  enum class Stdin { dev_null, pipe } stdin_mode = Stdin::dev_null;
  bool stdout_pipe = true;  // else the parent's stdout is inherited
  // With stdout_pipe: a pseudo-terminal instead of a pipe (its master is stdout_fd), raw (no
  // "\n" -> "\r\n"), and not the child's controlling terminal. Its end reads as EIO.
  bool stdout_terminal = false;
  int terminal_columns = 0, terminal_rows = 0;  // its window size (0: the kernel's 0x0)
  bool stderr_pipe = true;  // else inherited
  // The child's stdout goes into its stderr pipe (needs stderr_pipe, not stdout_pipe): the
  // frontend's ssh and srun, whose stdout must not land among the ranks' lines.
  bool stdout_to_stderr = false;
  // Run in the child just before exec, async-signal-safe only: returns 0, or an errno-like code
  // that fails the spawn. The daemon applies a rank's CPU/memory binding here.
  int (*pre_exec)(const void* context) = nullptr;
  const void* pre_exec_context = nullptr;
  int cgroup_procs_fd = -1;      // a cgroup.procs open for writing: the child joins it first
  // That cgroup's directory: the child is born in it (clone3 with CLONE_INTO_CGROUP, Linux 5.7),
  // which spares the first migration into a cgroup its wait for an RCU grace period (~16 ms);
  // where clone3 is refused (an older kernel, a seccomp filter) it joins through cgroup_procs_fd.
  int cgroup_dir_fd = -1;
  bool allow_parent_ptrace = false;  // PR_SET_PTRACER(parent): `tlaunch stacks` under Yama
  bool dies_with_parent = true;  // false: no death signal (the daemon's cgroup watcher outlives it)
  // A session of its own (setsid), not only a process group: no controlling terminal, so a
  // rank that opens /dev/tty (getpass, an ssh or sudo prompt) gets an error it can handle
  // instead of being stopped by SIGTTIN/SIGTTOU as a background group of the user's terminal
  // (the local launcher's daemon runs in it). Its process group is still its pid.
  bool new_session = false;
  int umask = -1;         // >= 0: the child's umask
  long long nofile = -1;  // >= 0: the child's soft limit of open files (at most the hard one); else
                          // the one this process started with (bootstrap/process_hygiene.h)
};

// Whether a child born in the cgroup `cgroup_dir_fd` (SpawnSpec::cgroup_dir_fd) lives: some
// kernels (seen on 6.18) kill such a child at birth when the parent's cgroup has had a
// cgroup.kill that the target has not, or the reverse (they compare the two cgroups' kill
// counters); then ranks must join by writing cgroup.procs instead. Starts and reaps one child
// that exits at once.
bool childSurvivesBirthIn(int cgroup_dir_fd);

struct SpawnedProcess {
  pid_t pid = -1;
  int pidfd = -1;  // -1 where pidfd_open is not available
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;  // the parent's ends, close-on-exec; -1 if not piped
};

// An error carries the child's errno: ENOENT gives Errc::program_missing, any other
// Errc::program_not_executable (fork/pipe failures: Errc::io).
Result<SpawnedProcess> spawnProcess(const SpawnSpec& spec);

// This program's own path (/proc/self/exe), "" where it cannot be read.
std::string thisExecutable();

// The current environment with `overrides` ("K=V") replacing or adding variables.
std::vector<std::string> environmentWith(const std::vector<std::string>& overrides);

}  // namespace tlaunch
