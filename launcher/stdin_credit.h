#pragma once
// The credit of `--stdin` forwarding, shared by the session (which grants what the rank took)
// and the thread that reads tlaunch's stdin (which takes before it reads). close() wakes the
// reader for good.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace tlaunch {

class StdinCredit {
 public:
  explicit StdinCredit(size_t window) : available_(window) {}
  // Waits for some credit; returns at most `most` bytes of it, or 0 once closed.
  size_t take(size_t most) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return closed_ || available_ > 0; });
    if (closed_) return 0;
    const size_t n = std::min(most, available_);
    available_ -= n;
    return n;
  }
  void grant(size_t n) {
    {
      std::lock_guard lk(mu_);
      available_ += n;
    }
    cv_.notify_all();
  }
  void close() {
    {
      std::lock_guard lk(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t available_;
  bool closed_ = false;
};

}  // namespace tlaunch
