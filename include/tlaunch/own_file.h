#pragma once
// A small file this process itself keeps or gives a child to write (a cache, a rank's error
// file), read whole only when it is a regular file of this user's no larger than `max_bytes`:
// never through a link, never blocking on a FIFO planted in its place.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <optional>
#include <string>

namespace tlaunch {

struct OwnFile {
  std::string bytes;
  struct stat st {};
};

inline std::optional<OwnFile> readOwnFile(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  OwnFile f;
  bool ok = ::fstat(fd, &f.st) == 0 && S_ISREG(f.st.st_mode) && f.st.st_uid == ::geteuid() &&
            static_cast<size_t>(f.st.st_size) <= max_bytes;
  if (ok) {
    f.bytes.resize(static_cast<size_t>(f.st.st_size));
    ok = ::read(fd, f.bytes.data(), f.bytes.size()) == static_cast<ssize_t>(f.bytes.size());
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return f;
}

}  // namespace tlaunch
