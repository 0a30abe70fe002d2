// The bound on libpmix's handshake reads (bootstrap/pmix_listener_guard.h): which versions need
// it, and that it lands on the listening sockets opened since, and on them only.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bootstrap/pmix_listener_guard.h"

using namespace tlaunch;

namespace {

int listeningSocket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  return fd;
}

long receiveTimeoutMs(int fd) {
  timeval tv{};
  socklen_t len = sizeof tv;
  REQUIRE(::getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0);
  return static_cast<long>(tv.tv_sec) * 1000 + tv.tv_usec / 1000;
}

}  // namespace

TEST_CASE("pmix listener guard: libpmix before 4.2.3 reads handshakes without a bound") {
  CHECK(handshakeReadUnbounded("OpenPMIx 4.2.2, repo rev: v4.2.2, Oct 11, 2022"));  // Debian 12's
  CHECK(handshakeReadUnbounded("OpenPMIx 4.1.2"));
  CHECK(handshakeReadUnbounded("OpenPMIx 3.2.3"));
  CHECK_FALSE(handshakeReadUnbounded("OpenPMIx 4.2.3, repo rev: v4.2.3"));  // retries EAGAIN: no use
  CHECK_FALSE(handshakeReadUnbounded("OpenPMIx 5.0.1"));
  CHECK_FALSE(handshakeReadUnbounded("Something Else 4.2.2"));
  CHECK_FALSE(handshakeReadUnbounded("OpenPMIx garbage"));
}

TEST_CASE("pmix listener guard: the receive timeout lands on new listening sockets only, and accepted ones inherit it") {
  const int old_listener = listeningSocket();
  const auto before = listeningSockets();
  const int new_listener = listeningSocket();
  CHECK(boundHandshakeReads(before, std::chrono::milliseconds(1500)) == 1);
  CHECK(receiveTimeoutMs(new_listener) == 1500);
  CHECK(receiveTimeoutMs(old_listener) == 0);
  // A stranger connects and says nothing: the accepted socket's blocking read gives up.
  sockaddr_in a{};
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(new_listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int stranger = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(stranger, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int accepted = ::accept4(new_listener, nullptr, nullptr, SOCK_CLOEXEC);
  REQUIRE(accepted >= 0);
  CHECK(receiveTimeoutMs(accepted) == 1500);
  for (int fd : {old_listener, new_listener, stranger, accepted}) ::close(fd);
}
