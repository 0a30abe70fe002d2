#pragma once
// libpmix before 4.2.3 reads a new connection's handshake with a blocking recv, without a time
// limit, on its one progress thread, the thread that serves every rank: a single connection to
// the server's port on 127.0.0.1 that sends nothing (any local user can make one) held every
// rank's PMIx call on the node for as long as it stayed open (MPI_Init: 59 s for 60 s held).
// Such a libpmix has no setting for it. What bounds it: SO_RCVTIMEO on its listening socket,
// which every accepted socket inherits; the blocking recv then fails with EAGAIN after the
// timeout, and 4.2.2 drops that peer (ptl_base_connect.c, ptl_base_connection_hdlr.c). Ranks
// send their handshake as they connect, and after it libpmix makes the socket non-blocking: the
// timeout changes nothing for them. From 4.2.3 EAGAIN is retried, so it is applied only below.
// A peer that trickles bytes still stretches the wait (a byte within each timeout).
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <set>
#include <string_view>

namespace tlaunch {

// Inodes of this process's sockets that listen (SO_ACCEPTCONN), from /proc/self/fd.
std::set<ino_t> listeningSockets();
// The same, less those in `before` (the ones a library opened since `before` was taken).
std::set<ino_t> listeningSocketInodesExcept(const std::set<ino_t>& before);

// SO_RCVTIMEO `timeout` on the listening sockets not in `before` (libpmix's, opened since).
// Returns how many got it.
int boundHandshakeReads(const std::set<ino_t>& before, std::chrono::milliseconds timeout);

// True for PMIx_Get_version()'s text of a libpmix that reads handshakes without a bound and
// drops a peer whose read timed out ("OpenPMIx 4.2.2, repo rev: ..." and before 4.2.3).
bool handshakeReadUnbounded(std::string_view version);

}  // namespace tlaunch
