#include "bootstrap/pmix_peer_guard.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>

#include "bootstrap/loopback_peer.h"
#include "bootstrap/pmix_listener_guard.h"

namespace tlaunch {
namespace {
// Read on libpmix's listener thread, written by the daemon's thread: atomics, and a mutex for
// the init's set. Process-wide state, because accept() is (daemon/pmix_accept.cc).
std::array<std::atomic<ino_t>, 8> g_guarded{};
std::atomic<int> g_refused{0};
std::atomic<bool> g_checked{false};
std::atomic<uid_t> g_ranks_uid{0};
// While PMIx_server_init runs: the listening sockets that existed before it (any other is libpmix's).
std::mutex g_init_mu;
bool g_initializing = false;
std::set<ino_t> g_before_init;

bool guarded(int fd) {
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino == 0) return false;
  for (const auto& inode : g_guarded)
    if (inode.load() == st.st_ino) return true;
  const std::lock_guard lock(g_init_mu);
  return g_initializing && !g_before_init.contains(st.st_ino);
}
}  // namespace

void beginGuardingPmixListeners(const std::set<ino_t>& before, uid_t ranks_uid) {
  g_ranks_uid.store(ranks_uid);
  const std::lock_guard lock(g_init_mu);
  g_before_init = before;
  g_initializing = true;
}

int endGuardingPmixListeners() {
  std::set<ino_t> before;
  {
    const std::lock_guard lock(g_init_mu);
    before = g_before_init;
  }
  int added = 0;
  for (const ino_t inode : listeningSocketInodesExcept(before))
    for (auto& slot : g_guarded) {
      ino_t none = 0;
      if (slot.compare_exchange_strong(none, inode)) {
        ++added;
        break;
      }
    }
  const std::lock_guard lock(g_init_mu);
  g_initializing = false;
  return added;
}

bool pmixPeerAllowed(int listen_fd, int accepted_fd) {
  if (!guarded(listen_fd)) return true;
  const auto uid = loopbackPeerUid(accepted_fd);
  if (uid && (*uid == ::geteuid() || *uid == 0 || *uid == g_ranks_uid.load())) return true;
  if (g_refused.fetch_add(1) < 5) {
    // A plain write, not spdlog: this runs on libpmix's thread, maybe with every descriptor in
    // use (a flood), where the sanitizers' check of spdlog's virtual call fails on its own.
    char line[256];
    const int n = uid ? std::snprintf(line, sizeof line,
                                      "tlaunchd: refused a connection to this job's PMIx server from uid %u "
                                      "(another user): only the job's own user may connect\n",
                                      static_cast<unsigned>(*uid))
                      : std::snprintf(line, sizeof line,
                                      "tlaunchd: refused a connection to this job's PMIx server from a socket the "
                                      "kernel could not name (out of descriptors?)\n");
    if (n > 0) (void)!::write(STDERR_FILENO, line, std::min(static_cast<size_t>(n), sizeof line - 1));
  }
  return false;
}

bool pmixAcceptChecked() { return g_checked.load(); }
void markPmixAcceptChecked() { g_checked.store(true); }

}  // namespace tlaunch
