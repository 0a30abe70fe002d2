#include "bootstrap/pmix_listener_guard.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <string>

namespace tlaunch {
namespace {

// Calls `each(fd, inode)` for every socket of this process that listens.
template <class Each>
void forListeningSockets(Each each) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    int fd = -1;
    const std::string_view name = e->d_name;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc() || fd == own) continue;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) continue;
    each(fd, st.st_ino);
  }
  ::closedir(dir);
}

}  // namespace

std::set<ino_t> listeningSockets() {
  std::set<ino_t> out;
  forListeningSockets([&](int, ino_t inode) { out.insert(inode); });
  return out;
}

std::set<ino_t> listeningSocketInodesExcept(const std::set<ino_t>& before) {
  std::set<ino_t> out;
  forListeningSockets([&](int, ino_t inode) {
    if (!before.contains(inode)) out.insert(inode);
  });
  return out;
}

int boundHandshakeReads(const std::set<ino_t>& before, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  int bounded = 0;
  forListeningSockets([&](int fd, ino_t inode) {
    if (before.contains(inode)) return;
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0) ++bounded;
  });
  return bounded;
}

bool handshakeReadUnbounded(std::string_view version) {
  constexpr std::string_view kPrefix = "OpenPMIx ";
  if (!version.starts_with(kPrefix)) return false;  // another implementation: left alone
  version.remove_prefix(kPrefix.size());
  int part[3] = {0, 0, 0};
  for (int& p : part) {
    const auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), p);
    if (ec != std::errc()) return false;
    version.remove_prefix(static_cast<size_t>(end - version.data()));
    if (!version.starts_with('.')) break;
    version.remove_prefix(1);
  }
  if (part[0] != 4) return part[0] < 4 && part[0] >= 2;  // 2.x and 3.x read the same way
  return part[1] < 2 || (part[1] == 2 && part[2] < 3);
}

}  // namespace tlaunch
