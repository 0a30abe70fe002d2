#include "bootstrap/spawn.h"

#include <fcntl.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "bootstrap/close_fds.h"
#include "bootstrap/process_hygiene.h"

extern char** environ;

namespace tlaunch {

namespace {

// The kernel's struct clone_args up to its `cgroup` field (Linux 5.7; CLONE_ARGS_SIZE_VER2), spelt
// out here: <linux/sched.h> clashes with glibc's <sched.h>, and glibc 2.36 has no clone3 wrapper.
struct CloneArgs {
  uint64_t flags = 0, pidfd = 0, child_tid = 0, parent_tid = 0, exit_signal = 0, stack = 0, stack_size = 0, tls = 0,
           set_tid = 0, set_tid_size = 0, cgroup = 0;
};
static_assert(sizeof(CloneArgs) == 88 && offsetof(CloneArgs, cgroup) == 80, "struct clone_args, version 2");
constexpr uint64_t kCloneIntoCgroup = 0x200000000ULL;

// A child born in the cgroup `cgroup_dir_fd`, like fork(2) otherwise; -1 where the kernel refuses
// (ENOSYS, EPERM from seccomp, E2BIG/EINVAL before Linux 5.7, EBUSY/EACCES/EOPNOTSUPP from the
// cgroup). A raw clone3 skips glibc's fork bookkeeping (atfork handlers, the other threads'
// malloc locks): the child must make raw system calls only until it execs or exits.
pid_t cloneIntoCgroup(int cgroup_dir_fd) {
#ifdef SYS_clone3
  CloneArgs args;
  args.flags = kCloneIntoCgroup;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cgroup_dir_fd);
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
#else
  (void)cgroup_dir_fd;
  errno = ENOSYS;
  return -1;
#endif
}

// fork(2), but born in the cgroup `cgroup_dir_fd` when it is given and the kernel allows it
// (`born_inside` says which; else the child joins through cgroup.procs).
pid_t forkInto(int cgroup_dir_fd, bool& born_inside) {
  born_inside = false;
  if (cgroup_dir_fd >= 0) {
    const pid_t pid = cloneIntoCgroup(cgroup_dir_fd);
    born_inside = pid >= 0;
    if (born_inside) return pid;
  }
  return ::fork();
}

struct Pipe {
  std::array<int, 2> fd{-1, -1};
  bool open() { return ::pipe2(fd.data(), O_CLOEXEC) == 0; }
  void closeEnd(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  void closeBoth() {
    closeEnd(0);
    closeEnd(1);
  }
  // A pseudo-terminal in place of the pipe: fd[0] its master (ours), fd[1] its slave (the
  // child's stdout), raw so that the child's bytes arrive as written.
  bool openTerminal(int columns, int rows) {
    fd[0] = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    std::array<char, 128> name{};
    if (fd[0] < 0 || ::grantpt(fd[0]) != 0 || ::unlockpt(fd[0]) != 0 ||
        ::ptsname_r(fd[0], name.data(), name.size()) != 0 ||
        (fd[1] = ::open(name.data(), O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
      const int e = errno;
      closeBoth();
      errno = e;
      return false;
    }
    termios raw{};
    if (::tcgetattr(fd[1], &raw) == 0) {
      ::cfmakeraw(&raw);
      ::tcsetattr(fd[1], TCSANOW, &raw);
    }
    // Programs size their bars and tables by it (tqdm, rich, ls): 0x0 made some draw nothing.
    const winsize size{static_cast<unsigned short>(rows), static_cast<unsigned short>(columns), 0, 0};
    if (columns > 0 && rows > 0) (void)::ioctl(fd[1], TIOCSWINSZ, &size);
    return true;
  }
};

}  // namespace

std::vector<std::string> environmentWith(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const std::string_view key = kv.substr(0, kv.find('=') + 1);
    bool replaced = false;
    for (const auto& o : overrides)
      if (std::string_view(o).substr(0, o.find('=') + 1) == key) replaced = true;
    if (!replaced) env.emplace_back(kv);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

Result<SpawnedProcess> spawnProcess(const SpawnSpec& spec) {
  if (spec.argv.empty() || spec.exe.empty()) return fail(Errc::internal, "spawnProcess: no program");
  Pipe in, out, err, report;
  auto closeAll = [&] {
    for (Pipe* p : {&in, &out, &err, &report}) p->closeBoth();
  };
  const bool pipe_in = spec.stdin_mode == SpawnSpec::Stdin::pipe;
  if (!report.open() || (pipe_in && !in.open()) || (spec.stderr_pipe && !err.open())) {
    const int e = errno;
    closeAll();
    return fail(Errc::io, std::string("pipe: ") + std::strerror(e));
  }
  if (spec.stdout_pipe && !(spec.stdout_terminal ? out.openTerminal(spec.terminal_columns, spec.terminal_rows) : out.open())) {
    const int e = errno;
    closeAll();
    return spec.stdout_terminal
               ? fail(Errc::io, std::string("no pseudo-terminal for its stdout (--pty): ") + std::strerror(e),
                      "the kernel's limit is /proc/sys/kernel/pty/max; or leave --pty out")
               : fail(Errc::io, std::string("pipe: ") + std::strerror(e));
  }
  int devnull = -1;
  if (!pipe_in) {
    devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) {
      const int e = errno;
      closeAll();
      return fail(Errc::io, std::string("/dev/null: ") + std::strerror(e));
    }
  }
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* exe = spec.exe.c_str();
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  const pid_t parent = ::getpid();
  const int stdin_src = pipe_in ? in.fd[0] : devnull;
  const int report_fd = report.fd[1];
  struct rlimit user_nofile = userNofileLimit();
  if (spec.nofile >= 0) user_nofile.rlim_cur = static_cast<rlim_t>(spec.nofile);

  // Signals blocked across fork: the child never runs one of the parent's handlers.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  bool born_inside = false;
  const pid_t pid = forkInto(spec.cgroup_dir_fd, born_inside);
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    const int e = errno;
    closeAll();
    if (devnull >= 0) ::close(devnull);
    return fail(Errc::io, std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    auto die = [report_fd](int code) {
      (void)!::write(report_fd, &code, sizeof code);
      ::_exit(127);
    };
    if (spec.new_session) ::setsid();
    else ::setpgid(0, 0);
    if (spec.dies_with_parent) {
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(errno);
      if (::getppid() != parent) ::_exit(137);  // the parent died before we got here
    }
    // Into the job's cgroup before anything runs: whatever the child starts is born inside it.
    if (!born_inside && spec.cgroup_procs_fd >= 0) (void)!::write(spec.cgroup_procs_fd, "0", 1);
    restoreUserNofile(user_nofile);
    if (spec.umask >= 0) ::umask(static_cast<mode_t>(spec.umask));
    // Under Yama's ptrace_scope=1 only ancestors may attach; naming the parent admits its
    // descendants (the daemon's gdb). The consent survives execve; EINVAL without Yama.
    if (spec.allow_parent_ptrace) ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(parent), 0, 0, 0);
    for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::dup2(stdin_src, STDIN_FILENO) < 0) die(errno);
    if (out.fd[1] >= 0 && ::dup2(out.fd[1], STDOUT_FILENO) < 0) die(errno);
    if (err.fd[1] >= 0 && ::dup2(err.fd[1], STDERR_FILENO) < 0) die(errno);
    if (spec.stdout_to_stderr && err.fd[1] >= 0 && ::dup2(err.fd[1], STDOUT_FILENO) < 0) die(errno);
    closeFdsFrom(3, report_fd);  // the report pipe is close-on-exec
    if (cwd != nullptr && ::chdir(cwd) != 0) die(errno);
    if (spec.pre_exec != nullptr) {
      const int rc = spec.pre_exec(spec.pre_exec_context);
      if (rc != 0) die(rc);
    }
    if (spec.search_path) ::execvpe(exe, argv.data(), envp.data());
    else ::execve(exe, argv.data(), envp.data());
    die(errno);
  }
  in.closeEnd(0);
  out.closeEnd(1);
  err.closeEnd(1);
  report.closeEnd(1);
  if (devnull >= 0) ::close(devnull);
  // From the parent too, so that a group signal works before the child runs; not for a new
  // session, which setsid() refuses to a process that leads its group already (and whose group
  // exists once the report below says the child has exec'd).
  if (!spec.new_session) ::setpgid(pid, pid);
  int child_errno = 0;
  ssize_t n = 0;
  do {
    n = ::read(report.fd[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  report.closeEnd(0);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    closeAll();
    int st = 0;
    ::waitpid(pid, &st, 0);  // it has _exit()ed already
    return fail(child_errno == ENOENT ? Errc::program_missing : Errc::program_not_executable,
                "cannot execute '" + spec.exe + "': " + std::strerror(child_errno));
  }
  SpawnedProcess p;
  p.pid = pid;
  p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  p.stdin_fd = in.fd[1];
  p.stdout_fd = out.fd[0];
  p.stderr_fd = err.fd[0];
  return p;
}

bool childSurvivesBirthIn(int cgroup_dir_fd) {
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = cloneIntoCgroup(cgroup_dir_fd);
  if (pid == 0) ::_exit(0);  // raw system calls only (see cloneIntoCgroup)
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return false;  // refused: no fork of the whole daemon just to find out
  int st = 0;
  pid_t r = 0;
  do {
    r = ::waitpid(pid, &st, 0);
  } while (r < 0 && errno == EINTR);
  return r == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

std::string thisExecutable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace tlaunch
