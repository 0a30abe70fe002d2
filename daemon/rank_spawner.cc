#include "daemon/rank_spawner.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bootstrap/close_fds.h"
#include "bootstrap/process_hygiene.h"

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

Result<RankProcess> spawnRank(const RankLaunch& launch) {
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  auto closeAll = [&] {
    for (int* p : {out_pipe, err_pipe, in_pipe, exec_pipe})
      for (int i = 0; i < 2; ++i)
        if (p[i] >= 0) ::close(p[i]);
  };
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0 ||
      (launch.stdin_pipe && ::pipe2(in_pipe, O_CLOEXEC) != 0)) {
    int e = errno;
    closeAll();
    return fail(Errc::io, std::string("pipe: ") + std::strerror(e));
  }
  int devnull = -1;
  if (!launch.stdin_pipe) {
    devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) {
      int e = errno;
      closeAll();
      return fail(Errc::io, std::string("/dev/null: ") + std::strerror(e));
    }
  }
  std::vector<char*> argv, envp;
  for (const auto& a : launch.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : launch.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* exe = launch.exe_path.c_str();
  const char* cwd = launch.cwd.empty() ? nullptr : launch.cwd.c_str();
  const PreparedBinding* binding = launch.binding ? &*launch.binding : nullptr;
  const pid_t daemon_pid = ::getpid();
  const int stdin_src = launch.stdin_pipe ? in_pipe[0] : devnull;
  const struct rlimit user_nofile = userNofileLimit();
  const int cgroup_procs = launch.cgroup_procs_fd;

  // Block signals across fork so that the child never runs one of the daemon's handlers.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    int e = errno;
    closeAll();
    if (devnull >= 0) ::close(devnull);
    return fail(Errc::io, std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    auto die = [&](int stage_errno) {
      int e = stage_errno;
      (void)!::write(exec_pipe[1], &e, sizeof e);
      ::_exit(127);
    };
    ::setpgid(0, 0);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(errno);
    if (::getppid() != daemon_pid) ::_exit(137);  // the daemon died before we got here
    // Into the job's cgroup before anything runs: whatever the rank starts is born inside it.
    // Should that fail, the daemon's subreaper scan still finds the rank's descendants.
    if (cgroup_procs >= 0) (void)!::write(cgroup_procs, "0", 1);
    restoreUserNofile(user_nofile);
    // `tlaunch stacks`: under Yama's ptrace_scope=1 only ancestors may attach, and the daemon's
    // gdb is the rank's sibling. Naming the daemon as ptracer admits its descendants too; the
    // consent is the process's and survives execve. Fails harmlessly (EINVAL) without Yama.
    ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(daemon_pid), 0, 0, 0);
    for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::dup2(stdin_src, STDIN_FILENO) < 0 || ::dup2(out_pipe[1], STDOUT_FILENO) < 0 ||
        ::dup2(err_pipe[1], STDERR_FILENO) < 0)
      die(errno);
    // Nothing of the daemon's may leak into the rank: above all not its control connection,
    // whose closing tells the frontend that this node is gone. Asio and libpmix do not open
    // everything close-on-exec. exec_pipe[1] stays (close-on-exec) to report an exec failure.
    closeFdsFrom(3, exec_pipe[1]);
    if (cwd && ::chdir(cwd) != 0) die(errno);
    if (binding) {
      int rc = applyPreparedBinding(*binding);
      if (rc != 0) die(rc);
    }
    ::execve(exe, argv.data(), envp.data());
    die(errno);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  if (launch.stdin_pipe) ::close(in_pipe[0]);
  if (devnull >= 0) ::close(devnull);
  ::setpgid(pid, pid);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (launch.stdin_pipe) ::close(in_pipe[1]);
    int st = 0;
    ::waitpid(pid, &st, 0);  // it has _exit()ed already
    return fail(child_errno == ENOENT ? Errc::program_missing : Errc::program_not_executable,
                "program '" + launch.exe_path + "' cannot be executed for rank " + std::to_string(launch.rank) + ": " +
                    std::strerror(child_errno));
  }
  RankProcess p;
  p.pid = pid;
  p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  p.stdout_fd = out_pipe[0];
  p.stderr_fd = err_pipe[0];
  p.stdin_fd = launch.stdin_pipe ? in_pipe[1] : -1;
  return p;
}

}  // namespace tlaunch
