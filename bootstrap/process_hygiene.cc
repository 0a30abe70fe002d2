#include "bootstrap/process_hygiene.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

namespace tlaunch {

namespace {
bool saved = false;
struct rlimit original {};
}  // namespace

unsigned hardenProcess() {
  // open() takes the lowest free descriptor: a closed 0, 1 or 2 gets /dev/null, in order.
  unsigned closed = 0;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) continue;
    closed |= 1U << fd;
    (void)::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  }
  // Past `ulimit -f` a write fails with EFBIG, reported like a full disk, instead of SIGXFSZ
  // killing tlaunch (and the job) while --output-dir grows. Children get every signal's default
  // back before exec (bootstrap/spawn.cc).
  ::signal(SIGXFSZ, SIG_IGN);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return closed;
  if (!saved) {
    original = lim;
    saved = true;
  }
  struct rlimit raised = lim;
  raised.rlim_cur = lim.rlim_max;
  if (raised.rlim_cur == RLIM_INFINITY) {
    // The kernel refuses more than fs.nr_open descriptors, whatever the hard limit says.
    unsigned long nr_open = 1048576;
    if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "re")) {
      if (std::fscanf(f, "%lu", &nr_open) != 1) nr_open = 1048576;
      std::fclose(f);
    }
    raised.rlim_cur = nr_open;
  }
  if (lim.rlim_cur < raised.rlim_cur) (void)::setrlimit(RLIMIT_NOFILE, &raised);
  return closed;
}

struct rlimit userNofileLimit() {
  if (saved) return original;
  struct rlimit lim {};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  return lim;
}

int currentUmask() {
  FILE* f = std::fopen("/proc/self/status", "re");
  if (!f) return -1;
  char line[256];
  unsigned mask = 01000;  // none read
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
  std::fclose(f);
  return mask <= 0777 ? static_cast<int>(mask) : -1;
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
