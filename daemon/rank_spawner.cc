#include "daemon/rank_spawner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/spawn.h"

namespace tlaunch {

namespace {

bool isExecutableFile(const std::string& p, int& err) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    err = errno;
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    err = EISDIR;
    return false;
  }
  if (::access(p.c_str(), X_OK) != 0) {
    err = errno;
    return false;
  }
  return true;
}

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

Result<std::string> resolveProgram(const std::string& program, const std::string& path, const std::string& cwd,
                                   const std::string& node_name) {
  if (program.empty()) return fail(Errc::usage, "no program given", "put the program after '--'");
  int err = 0;
  if (program.find('/') != std::string::npos) {
    std::string full = program[0] == '/' ? program : joinPath(cwd, program);
    if (isExecutableFile(full, err)) return program;
    if (err == ENOENT || err == ENOTDIR) {
      return fail(Errc::program_missing, "program '" + program + "' does not exist on node " + node_name +
                                             (program[0] == '/' ? "" : " (in " + cwd + ")"),
                  "check the path, or that the file system holding it is mounted on that node");
    }
    return fail(Errc::program_not_executable,
                "program '" + program + "' on node " + node_name + " cannot be executed: " + std::strerror(err),
                "chmod +x it, or run it through its interpreter (e.g. python3 " + program + ")");
  }
  bool saw_non_exec = false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string base = dir.empty() ? cwd : (dir[0] == '/' ? dir : joinPath(cwd, dir));
    std::string candidate = joinPath(base, program);
    if (isExecutableFile(candidate, err)) return candidate;
    if (err == EACCES) saw_non_exec = true;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (saw_non_exec) {
    return fail(Errc::program_not_executable,
                "program '" + program + "' was found on node " + node_name + " but is not executable",
                "chmod +x it");
  }
  return fail(Errc::program_missing, "program '" + program + "' not found on node " + node_name + " (PATH=" + path + ")",
              "install it there, give its full path, or pass PATH with -x PATH");
}

namespace {
// SpawnSpec::pre_exec: the rank's CPU and memory binding, in the child, raw system calls only.
int applyBinding(const void* binding) {
  return applyPreparedBinding(*static_cast<const PreparedBinding*>(binding));
}
}  // namespace

Result<RankProcess> spawnRank(const RankLaunch& launch) {
  SpawnSpec spec;
  spec.exe = launch.exe_path;
  spec.argv = launch.argv;
  spec.env = launch.env;
  spec.cwd = launch.cwd;
  spec.stdin_mode = launch.stdin_pipe ? SpawnSpec::Stdin::pipe : SpawnSpec::Stdin::dev_null;
  if (launch.binding) {
    spec.pre_exec = applyBinding;
    spec.pre_exec_context = &*launch.binding;
  }
  spec.cgroup_procs_fd = launch.cgroup_procs_fd;
  spec.allow_parent_ptrace = true;  // `tlaunch stacks`: the daemon's gdb is the rank's sibling
  auto spawned = spawnProcess(spec);
  if (!spawned) {
    Error e = spawned.error();
    if (e.code == Errc::program_missing || e.code == Errc::program_not_executable)
      e.message = "program '" + launch.exe_path + "' cannot be executed for rank " + std::to_string(launch.rank) +
                  ": " + e.message;
    return tl::unexpected<Error>(std::move(e));
  }
  RankProcess p;
  p.pid = spawned->pid;
  p.pidfd = spawned->pidfd;
  p.stdout_fd = spawned->stdout_fd;
  p.stderr_fd = spawned->stderr_fd;
  p.stdin_fd = spawned->stdin_fd;
  return p;
}

}  // namespace tlaunch
