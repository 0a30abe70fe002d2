#pragma once
// A whole file written so that a reader sees the old contents or the new, never half of them:
// the bytes go to a new file beside it, under a name of its own (random, O_EXCL | O_NOFOLLOW:
// never through a link someone planted, never onto another writer's file), which then replaces
// `path` by rename(). `mode` is subject to the umask, as for any new file. close() is checked:
// NFS reports a full disk there. Returns 0, or the errno of the step that failed.
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

namespace tlaunch {

// The name of the new file: "<path>.tmp" and 12 random hex digits. Without getrandom (an old
// seccomp profile) the clock and `attempt` make each try's name differ.
inline std::string replacementFileName(const std::string& path, int attempt = 0) {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    r = (static_cast<uint64_t>(::getpid()) << 32) ^ (static_cast<uint64_t>(now.tv_sec) << 20) ^
        static_cast<uint64_t>(now.tv_nsec) ^ (static_cast<uint64_t>(attempt) << 44);
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "%012llx", static_cast<unsigned long long>(r & 0xffffffffffffULL));
  return path + ".tmp" + hex;
}

// Until `fd` takes more: a stdout left non-blocking by another program on the same pipe or
// terminal (ssh does this to one it inherits) is waited on as a blocking write would be.
inline void waitWritable(int fd) {
  pollfd p{fd, POLLOUT, 0};
  while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
}

// Every byte to `fd`, through short writes, EINTR and EAGAIN: 0, or the errno that stopped it.
inline int writeWhole(int fd, std::string_view bytes) {
  size_t put = 0;
  while (put < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + put, bytes.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitWritable(fd);
      continue;
    }
    if (n <= 0) return n < 0 ? errno : EIO;
    put += static_cast<size_t>(n);
  }
  return 0;
}

// `keep_mode`: a regular file of this user's already at `path` keeps its permissions (a summary
// the user made private stays so) instead of `mode`.
inline int replaceFileContents(const std::string& path, std::string_view bytes, mode_t mode, bool keep_mode = false) {
  struct stat old{};
  const bool keep = keep_mode && ::lstat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode) && old.st_uid == ::geteuid();
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 4; ++attempt) {
    tmp = replacementFileName(path, attempt);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) return errno;
  }
  if (fd < 0) return EEXIST;
  int error = keep && ::fchmod(fd, old.st_mode & 07777) != 0 ? errno : 0;
  if (error == 0) error = writeWhole(fd, bytes);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) ::unlink(tmp.c_str());
  return error;
}

}  // namespace tlaunch
