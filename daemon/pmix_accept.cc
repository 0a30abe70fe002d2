// tlaunchd's accept(): libpmix's listener thread calls it in place of libc's (an executable's
// definitions come first in the dynamic linker's search), so that a connection of another user
// to the job's PMIx server is closed before libpmix reads it (bootstrap/pmix_peer_guard.h).
// Every other listener's connections (asio's) pass through unchanged.
#include <dlfcn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "bootstrap/pmix_peer_guard.h"

namespace {
using AcceptFn = int (*)(int, sockaddr*, socklen_t*);

AcceptFn nextAccept() {
  static const auto next = reinterpret_cast<AcceptFn>(::dlsym(RTLD_NEXT, "accept"));
  return next;
}

// Said before main(): the daemon's PMIx server knows its connections are checked.
[[maybe_unused]] const bool kChecked = (tlaunch::markPmixAcceptChecked(), true);
}  // namespace

extern "C" int accept(int fd, sockaddr* addr, socklen_t* len) {
  const AcceptFn next = nextAccept();
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int connection = next(fd, addr, len);
  if (connection < 0 || tlaunch::pmixPeerAllowed(fd, connection)) return connection;
  ::close(connection);
  errno = ECONNABORTED;  // libpmix skips it and goes on listening
  return -1;
}
