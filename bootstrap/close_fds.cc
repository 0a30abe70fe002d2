#include "bootstrap/close_fds.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

namespace tlaunch {

namespace {

// Parses a decimal fd name without the C library's locale machinery.
int parseFd(const char* name) {
  if (*name == '\0') return -1;
  int v = 0;
  for (const char* p = name; *p; ++p) {
    if (*p < '0' || *p > '9' || v > 100000000) return -1;
    v = v * 10 + (*p - '0');
  }
  return v;
}

struct LinuxDirent64 {
  unsigned long long d_ino;
  long long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

}  // namespace

bool closeListedFds(int first, int keep) noexcept {
  const int dir = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir < 0) return false;
  alignas(8) char buf[4096];
  // Closing while listing can make the kernel skip entries: list again until a pass closes none.
  for (bool closed_any = true; closed_any;) {
    closed_any = false;
    ::syscall(SYS_lseek, dir, 0, SEEK_SET);
    for (;;) {
      const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
        off += d->d_reclen;
        const int fd = parseFd(d->d_name);
        if (fd < first || fd == keep || fd == dir) continue;
        ::syscall(SYS_close, fd);
        closed_any = true;
      }
    }
  }
  ::syscall(SYS_close, dir);
  return true;
}

void markCloseOnExec(int fd) noexcept {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void closeFdsFrom(int first, int keep) noexcept {
  bool ok = true;
  if (keep >= first) {
    if (keep > first && ::syscall(SYS_close_range, first, keep - 1, 0) != 0) ok = false;
    if (ok && ::syscall(SYS_close_range, keep + 1, ~0U, 0) != 0) ok = false;
  } else if (::syscall(SYS_close_range, first, ~0U, 0) != 0) {
    ok = false;
  }
  if (!ok) closeListedFds(first, keep);
}

}  // namespace tlaunch
