// Which unauthenticated connection goes when there are too many (bootstrap/stranger_eviction.h).
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/stranger_eviction.h"

using namespace tlaunch;

TEST_CASE("stranger eviction: the host of a peer, IPv4, IPv6 and names without a port") {
  CHECK(hostOfPeer("10.0.0.2:40122") == "10.0.0.2");
  CHECK(hostOfPeer("::1:40122") == "::1");
  CHECK(hostOfPeer("fe80::1%eth0:22") == "fe80::1%eth0");
  CHECK(hostOfPeer("frontend") == "frontend");
  CHECK(hostOfPeer("").empty());
}

TEST_CASE("stranger eviction: the oldest connection of the host with the most waiting goes") {
  // A daemon from 10.0.0.5 waits first; a flood from 10.0.0.9 follows.
  std::vector<std::string_view> peers = {"10.0.0.5:1000", "10.0.0.9:1", "10.0.0.9:2", "10.0.0.7:5", "10.0.0.9:3"};
  CHECK(strangerToDrop(peers) == 1);
  // Equal counts: the host whose oldest waited longest.
  CHECK(strangerToDrop({"10.0.0.5:1", "10.0.0.9:1", "10.0.0.9:2", "10.0.0.5:2"}) == 0);
  // One host only (a flood from the daemons' own host, or the local launcher): the oldest, as before.
  CHECK(strangerToDrop({"127.0.0.1:5", "127.0.0.1:6"}) == 0);
  CHECK(strangerToDrop({"10.0.0.1:5"}) == 0);
  CHECK(strangerToDrop({}) == 0);
  // Repeated drops never reach the lone daemon while the flood has more than one connection.
  std::vector<std::string_view> flood = {"10.0.0.5:1000"};
  for (int i = 0; i < 50; ++i) flood.emplace_back("10.0.0.9:9");
  for (int i = 0; i < 49; ++i) {
    const size_t drop = strangerToDrop(flood);
    REQUIRE(drop != 0);
    flood.erase(flood.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  CHECK(flood.front() == "10.0.0.5:1000");
}

// Connections on one host (the local launcher's daemons, and a flood spread over 127.0.0.0/8):
// a connection that has waited past the grace goes first, whoever's host holds the most.
TEST_CASE("stranger eviction: a connection waiting past the grace goes before the busiest host's") {
  using Clock = std::chrono::steady_clock;
  const auto now = Clock::now();
  struct Waiting {
    std::string peer;
    Clock::time_point since;
  };
  const auto peerOf = [](const Waiting& w) { return std::string_view(w.peer); };
  const auto sinceOf = [](const Waiting& w) { return w.since; };
  const auto all = [](const Waiting&) { return true; };
  // A stale stranger first, then two daemons from 127.0.0.1 (the busiest host), fresh.
  std::vector<Waiting> list = {{"127.0.0.7:1", now - std::chrono::seconds(3)},
                               {"127.0.0.1:10", now - std::chrono::milliseconds(5)},
                               {"127.0.0.1:11", now}};
  CHECK(strangerToDrop(list.begin(), list.end(), all, peerOf, sinceOf, now) == list.begin());
  // Every one fresh: the busiest host's oldest, as before.
  list[0].since = now;
  CHECK(strangerToDrop(list.begin(), list.end(), all, peerOf, sinceOf, now) == list.begin() + 1);
  // Only those `waiting` accepts count.
  CHECK(strangerToDrop(list.begin(), list.end(), [](const Waiting&) { return false; }, peerOf, sinceOf, now) ==
        list.end());
}
