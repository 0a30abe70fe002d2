#include "launcher/held_signals.h"

#include <pthread.h>

#include <ctime>
#include <initializer_list>

namespace tlaunch {

sigset_t sessionSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  return set;
}

void blockSessionSignals() {
  const sigset_t set = sessionSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
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
