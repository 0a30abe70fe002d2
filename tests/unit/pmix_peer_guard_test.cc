// Who connects to the daemon's PMIx server (bootstrap/pmix_peer_guard.h): the kernel's owner of
// the connecting socket, found for a connection of this user and of another one (`nobody`,
// from a child that drops to it: the test runs as root in CI), and the guard's verdict.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "bootstrap/loopback_peer.h"
#include "bootstrap/pmix_listener_guard.h"
#include "bootstrap/pmix_peer_guard.h"

using namespace tlaunch;

namespace {

int listenOnLoopback(sockaddr_in& where) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  where = {};
  where.sin_family = AF_INET;
  where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof where;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&where), &len) == 0);
  return fd;
}

// A child that connects as `uid` and waits for the parent to look (its socket stays open).
pid_t connectAs(uid_t uid, const sockaddr_in& where, const int hold[2]) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (uid != ::geteuid() && (::setgid(65534) != 0 || ::setuid(uid) != 0)) ::_exit(3);
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || ::connect(s, reinterpret_cast<const sockaddr*>(&where), sizeof where) != 0) ::_exit(4);
    ::close(hold[1]);
    char byte = 0;
    (void)!::read(hold[0], &byte, 1);  // until the parent has looked (its end closes)
    ::_exit(0);
  }
  return child;
}

// A loopback listener with one connection of this user's accepted on it; the connecting child
// holds its socket open until `release()`.
struct OwnConnection {
  sockaddr_in where{};
  int listener = listenOnLoopback(where);
  int hold[2] = {-1, -1};
  pid_t mine = -1;
  int accepted = -1;
  OwnConnection() {
    REQUIRE(::pipe(hold) == 0);
    mine = connectAs(::geteuid(), where, hold);
    accepted = ::accept(listener, nullptr, nullptr);
    REQUIRE(accepted >= 0);
  }
  void release() {
    if (hold[1] >= 0) ::close(hold[1]);
    hold[1] = -1;
  }
  ~OwnConnection() {
    release();
    ::waitpid(mine, nullptr, 0);
    ::close(accepted);
    ::close(hold[0]);
    ::close(listener);
  }
};

}  // namespace

TEST_CASE("pmix peer guard: the owner of a loopback connection's other end, as the kernel knows it") {
  OwnConnection c;
  CHECK(loopbackPeerUid(c.accepted) == std::optional<uid_t>(::geteuid()));
  if (::geteuid() == 0) {  // another user's connection: only root can make one here
    const pid_t theirs = connectAs(65534, c.where, c.hold);
    const int other = ::accept(c.listener, nullptr, nullptr);
    REQUIRE(other >= 0);
    CHECK(loopbackPeerUid(other) == std::optional<uid_t>(65534));
    ::close(other);
    c.release();
    int status = 0;
    ::waitpid(theirs, &status, 0);
    CHECK(WEXITSTATUS(status) == 0);
  }
}

TEST_CASE("pmix peer guard: connections to a guarded listener pass for this user, others' listeners untouched") {
  const std::set<ino_t> before = listeningSockets();
  OwnConnection c;
  CHECK(pmixPeerAllowed(c.listener, c.accepted));  // not guarded yet: anything passes
  beginGuardingPmixListeners(before, ::geteuid());
  CHECK(endGuardingPmixListeners() == 1);
  CHECK(pmixPeerAllowed(c.listener, c.accepted));  // guarded, and ours
  if (::geteuid() == 0) {
    const pid_t theirs = connectAs(65534, c.where, c.hold);
    const int other = ::accept(c.listener, nullptr, nullptr);
    REQUIRE(other >= 0);
    CHECK_FALSE(pmixPeerAllowed(c.listener, other));  // nobody's: refused
    ::close(other);
    c.release();
    ::waitpid(theirs, nullptr, 0);
  }
}

// A client that sends its handshake and closes before the accept: its socket is then a kernel
// stub (TIME_WAIT, FIN_WAIT2) that says uid 0, and passed as root; it is no process's socket.
TEST_CASE("pmix peer guard: a peer that closed before the accept is nobody's, not root's") {
  if (::geteuid() != 0) return;  // another user's socket: only root can make one here
  sockaddr_in where{};
  const int listener = listenOnLoopback(where);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || ::connect(s, reinterpret_cast<const sockaddr*>(&where), sizeof where) != 0) ::_exit(4);
    (void)!::write(s, "handshake", 9);
    ::close(s);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WEXITSTATUS(status) == 0);
  ::usleep(200 * 1000);  // past the server's delayed ACK of the FIN
  const int accepted = ::accept(listener, nullptr, nullptr);
  REQUIRE(accepted >= 0);
  CHECK_FALSE(loopbackPeerUid(accepted).has_value());
  ::close(accepted);
  ::close(listener);
}
