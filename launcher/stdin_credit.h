#pragma once
// The credit of `--stdin` forwarding, shared by the session (which grants what the rank took)
// and the thread that reads tlaunch's stdin (which takes before it reads). close() wakes the
// reader for good (also out of its poll, through wakeFd()), and nothing the reader does after it
// reaches the session.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace tlaunch {

class StdinCredit {
 public:
  explicit StdinCredit(size_t window) : window_(window), available_(window) {}
  ~StdinCredit() {
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }
  StdinCredit(const StdinCredit&) = delete;
  StdinCredit& operator=(const StdinCredit&) = delete;
  // Readable once closed: the reader polls it beside its stdin, so that it does not read (and
  // lose) what comes after the rank stopped taking input. -1 if no eventfd could be made.
  int wakeFd() const { return wake_fd_; }
  // Waits for some credit; returns at most `most` bytes of it, or 0 once closed.
  size_t take(size_t most) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return closed_ || available_ > 0; });
    if (closed_) return 0;
    const size_t n = std::min(most, available_);
    available_ -= n;
    return n;
  }
  // Never past the window: a daemon that grants more than its rank took cannot unbound it.
  void grant(size_t n) {
    {
      std::lock_guard lk(mu_);
      available_ += std::min(n, window_ - available_);
    }
    cv_.notify_all();
  }
  // Runs `f` (which hands what was read to the session) only while the session lasts, under the
  // lock close() takes: the reader may be blocked in read() long after the job ended, and what
  // it reads then must not reach a session (and io_context) that no longer exist.
  template <class F>
  bool whileOpen(F&& f) {
    std::lock_guard lk(mu_);
    if (closed_) return false;
    f();
    return true;
  }
  void close() {
    {
      std::lock_guard lk(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    const std::uint64_t one = 1;
    if (wake_fd_ >= 0 && ::write(wake_fd_, &one, sizeof one) < 0) {
      // Only a full counter fails, and then it is readable already.
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const size_t window_;
  size_t available_;
  bool closed_ = false;
  int wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
};

}  // namespace tlaunch
