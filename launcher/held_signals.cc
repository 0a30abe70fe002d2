#include "launcher/held_signals.h"

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <initializer_list>

namespace tlaunch {

sigset_t sessionSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  return set;
}

sigset_t blockSessionSignals() {
  const sigset_t set = sessionSignals();
  sigset_t before;
  sigemptyset(&before);
  pthread_sigmask(SIG_BLOCK, &set, &before);
  return before;
}

void unblockSessionSignals() {
  const sigset_t set = sessionSignals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

namespace {
bool ignoredNow(int sig) {
  struct sigaction now{};
  return ::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN;
}
}  // namespace

IgnoredSignals signalsIgnoredAtStart() { return {ignoredNow(SIGHUP), ignoredNow(SIGINT), ignoredNow(SIGQUIT)}; }

namespace {
// A signal handler's only state, lock-free atomics (async-signal-safe); one SetUpSignals lives
// at a time (runJob's first attempt).
std::atomic<int> g_setup_first{0};
std::atomic<int64_t> g_setup_first_ms{0};
constexpr int kSetUpSignals[] = {SIGINT, SIGTERM, SIGHUP};

int64_t monotonicMs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

void onSetUpSignal(int sig) {
  const int64_t now = monotonicMs();
  int none = 0;
  if (g_setup_first.compare_exchange_strong(none, sig)) {
    g_setup_first_ms.store(now);
    return;
  }
  // Within a second: the same request again (a wrapper passing Ctrl-C on, SIGTERM then SIGHUP).
  if (now - g_setup_first_ms.load() < 1000) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered once this handler returns: the default action, as without tlaunch's
}
}  // namespace

SetUpSignals::SetUpSignals(IgnoredSignals ignored) : ignored_(ignored) {
  static_assert(std::atomic<int64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);
  g_setup_first.store(0);
  sigset_t set;
  sigemptyset(&set);
  struct sigaction action{};
  action.sa_handler = onSetUpSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking open or read returns EINTR
  for (size_t i = 0; i < 3; ++i) {
    const int sig = kSetUpSignals[i];
    if (ignored_.has(sig)) continue;
    ::sigaction(sig, &action, &previous_[i]);
    sigaddset(&set, sig);
  }
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);  // one that waited since main() comes now
  armed_ = true;
}

void SetUpSignals::disarm() {
  if (!armed_) return;
  armed_ = false;
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kSetUpSignals) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  for (size_t i = 0; i < 3; ++i)
    if (!ignored_.has(kSetUpSignals[i])) ::sigaction(kSetUpSignals[i], &previous_[i], nullptr);
}

int SetUpSignals::caught() const { return g_setup_first.load(); }

HeldSignals::~HeldSignals() {
  takeInterrupt();  // one that came after the last session: the job's status is already decided
  release();
}

void HeldSignals::hold() {
  if (held_) return;
  blockSessionSignals();
  held_ = true;
}

void HeldSignals::release() {
  if (!held_) return;
  unblockSessionSignals();
  held_ = false;
}

int HeldSignals::takeInterrupt() {
  if (!held_) return 0;
  const sigset_t set = sessionSignals();
  const timespec now{};
  int interrupt = 0;
  for (int sig; (sig = ::sigtimedwait(&set, nullptr, &now)) > 0;)
    if (interrupt == 0 && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !ignored_.has(sig)) interrupt = sig;
  return interrupt;
}

}  // namespace tlaunch
