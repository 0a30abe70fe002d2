#include "launcher/child_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "bootstrap/close_fds.h"
#include "bootstrap/process_hygiene.h"

extern char** environ;

namespace tlaunch {

namespace {
constexpr size_t kStderrKeep = size_t{16} * 1024;

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}
}  // namespace

ChildProcess::ChildProcess(ChildProcess&& o) noexcept { *this = std::move(o); }

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    closeFd(stdin_fd_);
    closeFd(stderr_fd_);
    pid_ = std::exchange(o.pid_, -1);
    stdin_fd_ = std::exchange(o.stdin_fd_, -1);
    stderr_fd_ = std::exchange(o.stderr_fd_, -1);
    exited_ = o.exited_;
    status_ = o.status_;
    stderr_ = std::move(o.stderr_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  closeFd(stdin_fd_);
  closeFd(stderr_fd_);
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv, const std::string& stdin_data,
                                         const std::vector<std::string>& extra_env) {
  if (argv.empty()) return fail(Errc::internal, "ChildProcess::spawn: empty argv");
  int in_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return fail(Errc::io, std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return fail(Errc::io, std::string("pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    bool replaced = false;
    for (const auto& x : extra_env) {
      auto eq = x.find('=');
      if (eq != std::string::npos && kv.substr(0, eq + 1) == std::string_view(x).substr(0, eq + 1)) replaced = true;
    }
    if (!replaced) env_store.emplace_back(kv);
  }
  for (const auto& x : extra_env) env_store.push_back(x);
  std::vector<char*> cenv;
  for (auto& s : env_store) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const struct rlimit user_nofile = userNofileLimit();

  // Block signals across fork so that the child never runs one of our handlers before exec.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    int e = errno;
    for (int fd : {in_pipe[0], in_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return fail(Errc::io, std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    closeFdsFrom(3, -1);  // no listener or control socket leaks into ssh/srun
    // srun propagates its limits to the tasks: tlaunchd must see the user's own soft limit.
    restoreUserNofile(user_nofile);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "exec failed: ";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)!::write(STDERR_FILENO, cargv[0], std::strlen(cargv[0]));
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(errno == ENOENT ? 127 : 126);
  }
  ::setpgid(pid, pid);  // also from the parent, so signal() works even before the child runs
  ::close(in_pipe[0]);
  ::close(err_pipe[1]);
  ChildProcess cp;
  cp.pid_ = pid;
  cp.stdin_fd_ = in_pipe[1];
  cp.stderr_fd_ = err_pipe[0];
  ::fcntl(cp.stderr_fd_, F_SETFL, O_NONBLOCK);
  // The secret is one short line: it fits in the pipe buffer, so this cannot block.
  size_t off = 0;
  while (off < stdin_data.size()) {
    ssize_t n = ::write(cp.stdin_fd_, stdin_data.data() + off, stdin_data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child died already; poll() will tell
    off += static_cast<size_t>(n);
  }
  return cp;
}

void ChildProcess::drainStderr() {
  if (stderr_fd_ < 0) return;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(stderr_fd_, buf, sizeof buf);
    if (n > 0) {
      stderr_.append(buf, static_cast<size_t>(n));
      if (stderr_.size() > kStderrKeep) stderr_.erase(0, stderr_.size() - kStderrKeep);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) closeFd(stderr_fd_);
    break;
  }
}

const std::string& ChildProcess::stderrText() {
  drainStderr();
  return stderr_;
}

bool ChildProcess::poll() {
  if (pid_ <= 0) return true;
  if (exited_) return true;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    status_ = st;
    drainStderr();
  }
  return exited_;
}

std::string ChildProcess::describeStatus() const {
  if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status_)) + " (" +
                                   ::strsignal(WTERMSIG(status_)) + ")";
  return "ended";
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0 && !exited_) ::kill(-pid_, sig);
}

void ChildProcess::closeStdin() { closeFd(stdin_fd_); }

void ChildProcess::terminate(int grace_ms) {
  if (pid_ <= 0 || poll()) return;
  signal(SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (poll()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  signal(SIGKILL);
  int st = 0;
  if (::waitpid(pid_, &st, 0) == pid_) {
    exited_ = true;
    status_ = st;
  }
  drainStderr();
}

}  // namespace tlaunch
