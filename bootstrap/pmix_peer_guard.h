#pragma once
// libpmix's PMIx server listens on TCP 127.0.0.1, and its "native" security takes the uid and
// gid a client writes in its own handshake (TCP carries no credentials): any local user could
// connect as the job's owner and call PMIx_Spawn as them (root included), read the job's data
// and environment, or abort it; and a handshake libpmix 4.2.2 rejects for its uid wedges that
// server's progress thread for good. So the daemon checks the real owner of each connection to
// those sockets before libpmix sees it: tlaunchd's own accept() (daemon/pmix_accept.cc, which
// libpmix calls in place of libc's) asks the kernel for the connecting socket's uid
// (loopback_peer.h) and closes one of another user's, answering libpmix ECONNABORTED, which it
// skips. Root's connections pass (root may do anything to the job anyway).
#include <sys/types.h>

#include <set>

namespace tlaunch {

// Around PMIx_server_init, whose listener thread may accept before init returns: from begin,
// every listening socket not in `before` is guarded (only libpmix opens any meanwhile: the
// daemon's thread is inside the init); end registers those that exist then and returns how
// many (at most a few: one PMIx server per daemon). `ranks_uid`: the user the ranks run as (the
// daemon's own, or the job's user a root daemon starts them as), who may connect as well.
void beginGuardingPmixListeners(const std::set<ino_t>& before, uid_t ranks_uid);
int endGuardingPmixListeners();
// Whether a connection accepted on `listen_fd` may go on to libpmix: the listener is not
// guarded, or the peer is the ranks' user, this process's, or root. Refusals are logged (the
// first ones).
bool pmixPeerAllowed(int listen_fd, int accepted_fd);
// Whether tlaunchd's accept() checks connections (daemon/pmix_accept.cc is linked in): a
// process without it (a test harness) only registers.
bool pmixAcceptChecked();
void markPmixAcceptChecked();

}  // namespace tlaunch
