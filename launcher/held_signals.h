#pragma once
// Ctrl-C between two sessions of one job. Each JobSession handles SIGINT, SIGTERM and SIGHUP
// (and SIGQUIT, SIGUSR1, SIGUSR2) while it runs; between sessions (a --max-restarts attempt
// being set up) and after the last one (--summary-json being written) no handler exists, and
// the default action would end tlaunch without its summary or its "not restarted" note.
// Held there, such a signal waits: runJob takes it before the next attempt and ends the job
// as interrupted, or the next session receives it once it handles signals itself.
#include <csignal>

namespace tlaunch {

// The signals a session handles; helper threads block them for good (blockSessionSignals), so
// that only the thread that holds and releases them can receive them.
sigset_t sessionSignals();
// Returns the mask before. main() blocks them before anything else, so that one sent while a
// job is being set up waits for runJob (which ends the job before it starts, with its summary);
// a subcommand that starts no job puts the mask it inherited back.
sigset_t blockSessionSignals();
void unblockSessionSignals();

// Which of SIGHUP, SIGINT and SIGQUIT tlaunch was started with ignored, asked once before any
// session: under nohup (SIGHUP), and as a background command of a shell script (SIGINT and
// SIGQUIT: the terminal's Ctrl-C is not for it). Such a signal stays ignored, as bash, make and
// Python leave it; SIGTERM is always handled.
struct IgnoredSignals {
  bool hup = false;
  bool intr = false;
  bool quit = false;
  bool has(int sig) const { return (sig == SIGHUP && hup) || (sig == SIGINT && intr) || (sig == SIGQUIT && quit); }
};
IgnoredSignals signalsIgnoredAtStart();

// While the job's first attempt is set up (a `--hostfile <(script)` being read, names looked
// up), a signal must still end tlaunch: SIGINT, SIGTERM and SIGHUP (those not ignored at start)
// go to a handler that records the first, which interrupts a blocking open or read (EINTR), and
// lets a second one, a second or more later, end tlaunch by its default action (a set-up stuck
// where EINTR is retried, a name lookup). The other session signals stay held.
class SetUpSignals {
 public:
  explicit SetUpSignals(IgnoredSignals ignored);
  ~SetUpSignals() { disarm(); }
  SetUpSignals(const SetUpSignals&) = delete;
  SetUpSignals& operator=(const SetUpSignals&) = delete;
  // The set-up is over: they are held again (blocked) for the session, default handlers back.
  void disarm();
  int caught() const;  // the first of them since construction, 0 if none

 private:
  bool armed_ = false;
  IgnoredSignals ignored_;
  struct sigaction previous_[3]{};
};

class HeldSignals {
 public:
  // `ignored`: a signal of these that waited is no interrupt.
  explicit HeldSignals(IgnoredSignals ignored) : ignored_(ignored) {}
  ~HeldSignals();
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

  void hold();     // from now on the session signals wait (this thread's mask)
  void release();  // they are delivered again, a waiting one at once to the handler now in place
  // The first SIGINT, SIGTERM or SIGHUP that waited since hold() (0: none); every waiting
  // session signal is consumed, so a SIGUSR1 sent between attempts reaches no new rank.
  int takeInterrupt();
  IgnoredSignals ignored() const { return ignored_; }

 private:
  bool held_ = false;
  IgnoredSignals ignored_;
};

}  // namespace tlaunch
