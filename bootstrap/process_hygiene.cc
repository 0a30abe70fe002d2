#include "bootstrap/process_hygiene.h"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tlaunch {

namespace {
bool saved = false;
struct rlimit original {};
}  // namespace

void hardenProcess() {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (!saved) {
    original = lim;
    saved = true;
  }
  if (lim.rlim_cur < lim.rlim_max) {
    struct rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &raised);
  }
}

struct rlimit userNofileLimit() {
  if (saved) return original;
  struct rlimit lim {};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  return lim;
}

void restoreUserNofile(const struct rlimit& limit) {
  // Lowering the soft limit needs no privilege; the hard limit stays as it is.
  struct rlimit soft_only {};
  soft_only.rlim_cur = limit.rlim_cur;
  soft_only.rlim_max = RLIM_INFINITY;
  struct rlimit current {};
  if (::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &current) != 0) return;
  soft_only.rlim_max = current.rlim_max;
  if (soft_only.rlim_cur > soft_only.rlim_max) soft_only.rlim_cur = soft_only.rlim_max;
  (void)::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &soft_only, nullptr);
}

}  // namespace tlaunch
