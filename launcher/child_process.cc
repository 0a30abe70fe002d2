#include "launcher/child_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "bootstrap/spawn.h"

namespace tlaunch {

namespace {
constexpr size_t kOutputKeep = size_t{16} * 1024;

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// write() to a pipe whose reader may have gone (a helper that exited at once): EPIPE, not
// death by SIGPIPE, whatever the caller's disposition of it.
ssize_t writeWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const ssize_t n = ::write(fd, data, size);
  const int saved = errno;
  sigset_t pending;
  // EPIPE, or a part written before the reader left: either raised a SIGPIPE of this thread's.
  const bool raised = (n < 0 && errno == EPIPE) || (n >= 0 && static_cast<size_t>(n) < size);
  if (raised && !sigismember(&old, SIGPIPE) && ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
    const timespec now{};
    ::sigtimedwait(&pipe_only, nullptr, &now);  // the SIGPIPE this write raised
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return n;
}
}  // namespace

ChildProcess::ChildProcess(ChildProcess&& o) noexcept { *this = std::move(o); }

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    closeFd(stdin_fd_);
    closeFd(output_fd_);
    pid_ = std::exchange(o.pid_, -1);
    stdin_fd_ = std::exchange(o.stdin_fd_, -1);
    output_fd_ = std::exchange(o.output_fd_, -1);
    exited_ = o.exited_;
    status_ = o.status_;
    output_ = std::move(o.output_);
    captured_ = o.captured_;
    drained_at_ = o.drained_at_;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  closeFd(stdin_fd_);
  closeFd(output_fd_);
}

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv, const std::string& stdin_data,
                                         const std::vector<std::string>& extra_env) {
  if (argv.empty()) return fail(Errc::internal, "ChildProcess::spawn: empty argv");
  SpawnSpec spec;
  spec.exe = argv[0];
  spec.search_path = true;
  spec.argv = argv;
  spec.env = environmentWith(extra_env);
  spec.stdin_mode = SpawnSpec::Stdin::pipe;
  spec.stdout_pipe = false;
  spec.stdout_to_stderr = true;  // nothing there is ours to print (README: ranks' lines only)
  auto spawned = spawnProcess(spec);
  if (!spawned) {
    Error e = spawned.error();
    if (e.code == Errc::program_missing)
      e.hint = "install " + argv[0] + " on this machine or put its directory in PATH";
    return tl::unexpected<Error>(std::move(e));
  }
  ChildProcess cp;
  cp.pid_ = spawned->pid;
  if (spawned->pidfd >= 0) ::close(spawned->pidfd);
  cp.stdin_fd_ = spawned->stdin_fd;
  cp.output_fd_ = spawned->stderr_fd;
  ::fcntl(cp.output_fd_, F_SETFL, O_NONBLOCK);
  // The secret is one short line: it fits in the pipe buffer, so this cannot block.
  size_t off = 0;
  while (off < stdin_data.size()) {
    const ssize_t n = writeWithoutSigpipe(cp.stdin_fd_, stdin_data.data() + off, stdin_data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child died already; poll() will tell
    off += static_cast<size_t>(n);
  }
  return cp;
}

void ChildProcess::drainOutput() {
  if (output_fd_ < 0) return;
  drained_at_ = std::chrono::steady_clock::now();
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(output_fd_, buf, sizeof buf);
    if (n > 0) {
      output_.append(buf, static_cast<size_t>(n));
      captured_ += static_cast<size_t>(n);
      if (output_.size() > kOutputKeep) output_.erase(0, output_.size() - kOutputKeep);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) closeFd(output_fd_);
    break;
  }
}

const std::string& ChildProcess::outputText() {
  drainOutput();
  return output_;
}

bool ChildProcess::poll() {
  if (pid_ <= 0) return true;
  if (exited_) return true;
  if (std::chrono::steady_clock::now() - drained_at_ >= std::chrono::milliseconds(200)) drainOutput();
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    status_ = st;
    drainOutput();
  }
  return exited_;
}

bool ChildProcess::waitExit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
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

int terminateProcessGroup(pid_t pid, int grace_ms) {
  ::kill(-pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  int st = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return st;
}

void ChildProcess::terminate(int grace_ms) {
  if (pid_ <= 0 || poll()) return;
  if (const int st = terminateProcessGroup(pid_, grace_ms); st != -1) status_ = st;
  exited_ = true;
  drainOutput();
}

}  // namespace tlaunch
