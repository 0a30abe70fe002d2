#pragma once
// Who is at the other end of a TCP connection made on this host (to 127.0.0.1): the uid that
// owns the connecting socket, as the kernel knows it (sock_diag, else /proc/net/tcp). TCP
// carries no credentials of its own, unlike a unix socket's SO_PEERCRED.
#include <sys/types.h>

#include <optional>

namespace tlaunch {

// `fd`: the accepted end of a connection. nullopt when the peer is not a socket of this host's
// network namespace (a remote peer) or cannot be found (it closed already).
std::optional<uid_t> loopbackPeerUid(int fd);

}  // namespace tlaunch
