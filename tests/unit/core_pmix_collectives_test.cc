// The frontend's collectives among some ranks (launcher/pmix_collectives.h): the bounds that keep
// the ranks' code (or a daemon gone wrong) from growing them without end or stalling the frontend.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "bootstrap/frame_codec.h"
#include "bootstrap/pmix_server.h"
#include "launcher/pmix_collectives.h"

using namespace tlaunch;

namespace {
// What each node takes from a broadcast answer: its own request id (daemon/pmix_pubsub_wire.cc).
void deliverBroadcast(std::vector<std::pair<int, Json>>& to, const Json& m) {
  for (const auto& [node, id] : m["ids"].items()) {
    Json own = m;
    own.erase("ids");
    own["id"] = id;
    to.emplace_back(std::stoi(node), std::move(own));
  }
}

struct CollectiveSends {
  std::vector<std::pair<int, Json>> msgs;
  int node_count_calls = 0;
  int broadcasts = 0;
  // Ranks 0-3 on nodes 0 and 1, two each.
  PmixCollectives c{[this](int node, const Json& m) { msgs.emplace_back(node, m); },
                    [this](const Json& m) {
                      ++broadcasts;
                      deliverBroadcast(msgs, m);
                    },
                    [](int rank) { return rank >= 0 && rank < 4 ? rank / 2 : -1; },
                    [this] {
                      ++node_count_calls;
                      return 2;
                    }};
  PmixReply status(size_t i) const { return static_cast<PmixReply>(getInt(msgs.at(i).second, "status", -1)); }
};

Json coll(int id, std::vector<int> ranks, const std::string& data = "") {
  return {{"t", "coll"}, {"id", id}, {"kind", "fence"}, {"ranks", std::move(ranks)}, {"d", binary(data)}};
}
}  // namespace

TEST_CASE("pmix collectives: a wildcard rank named many times is looked up once") {
  CollectiveSends s;
  s.c.onMessage(0, coll(1, std::vector<int>(100'000, -1)));
  CHECK(s.msgs.empty());  // waits for node 1
  CHECK(s.node_count_calls <= 3);  // once per node, not once per wildcard (100,000 x 2 before)
  s.c.onMessage(1, coll(2, {-1}));  // a different collective (other ranks list): its own round
  CHECK(s.msgs.empty());
  s.c.onMessage(1, coll(3, std::vector<int>(100'000, -1)));
  REQUIRE(s.msgs.size() == 2);
  CHECK(s.status(0) == PmixReply::ok);
}

TEST_CASE("pmix collectives: past kMaxOpenRounds a new round is refused, and completing one makes room") {
  CollectiveSends s;
  // Node 0 enters the same collective again and again: each entry opens a round node 1 never joins.
  for (size_t i = 0; i < PmixCollectives::kMaxOpenRounds; ++i) s.c.onMessage(0, coll(static_cast<int>(i), {0, 2}));
  REQUIRE(s.msgs.empty());
  s.c.onMessage(0, coll(-1, {0, 2}));
  REQUIRE(s.msgs.size() == 1);
  CHECK(s.status(0) == PmixReply::no_room);
  s.c.onMessage(0, coll(-2, {1, 3}));  // another collective is refused as well
  REQUIRE(s.msgs.size() == 2);
  CHECK(s.status(1) == PmixReply::no_room);
  s.c.onMessage(1, coll(-3, {0, 2}));  // node 1 completes the first round
  REQUIRE(s.msgs.size() == 4);
  CHECK(s.status(2) == PmixReply::ok);
  s.c.onMessage(0, coll(-4, {1, 3}));  // there is room for one again
  CHECK(s.msgs.size() == 4);
}

TEST_CASE("pmix collectives: a round whose data would not fit in one frame fails on every node in it") {
  CollectiveSends s;
  const size_t half = kMaxCollectedBytes / 2 + 1;
  s.c.onMessage(0, coll(1, {0, 2}, std::string(half, 'a')));
  CHECK(s.msgs.empty());
  s.c.onMessage(1, coll(2, {0, 2}, std::string(half, 'b')));
  REQUIRE(s.msgs.size() == 2);
  CHECK(s.status(0) == PmixReply::no_room);
  CHECK(s.status(1) == PmixReply::no_room);
  CHECK(s.c.pending() == 0);
  s.c.onMessage(0, coll(3, {0, 2}, "x"));  // the next round is a fresh one
  s.c.onMessage(1, coll(4, {0, 2}, "y"));
  REQUIRE(s.msgs.size() == 4);
  CHECK(s.status(3) == PmixReply::ok);
  CHECK(bytesAt(s.msgs[3].second, "d") == "xy");
}

// Nodes 0 and 1 each bring more than half of what one frame carries: the round fails for them.
// A node that enters after that failure got a new round, which waited for nodes already
// answered: its ranks hung in PMIx_Fence / Group_construct.
TEST_CASE("pmix collectives: a round too big for a frame fails for the nodes that enter it later too") {
  std::vector<std::pair<int, Json>> sent;
  // Ranks 0-2, one per node.
  PmixCollectives c([&](int node, const Json& m) { sent.emplace_back(node, m); },
                    [&](const Json& m) { deliverBroadcast(sent, m); },
                    [](int rank) { return rank >= 0 && rank < 3 ? rank : -1; }, [] { return 3; });
  const std::string half(kMaxCollectedBytes / 2 + 1, 'x');
  c.onMessage(0, coll(1, {0, 1, 2}, half));
  c.onMessage(1, coll(2, {0, 1, 2}, half));
  REQUIRE(sent.size() == 2);
  for (const auto& [node, m] : sent) CHECK(static_cast<PmixReply>(getInt(m, "status", -1)) == PmixReply::no_room);
  c.onMessage(2, coll(3, {0, 1, 2}, "small"));
  REQUIRE(sent.size() == 3);
  CHECK(sent[2].first == 2);
  CHECK(sent[2].second["id"] == 3);
  CHECK(static_cast<PmixReply>(getInt(sent[2].second, "status", -1)) == PmixReply::no_room);
  CHECK(c.pending() == 0);  // every node has been answered: the round is closed
  // The next collective over the same ranks is a new round, and completes.
  for (int n = 0; n < 3; ++n) c.onMessage(n, coll(10 + n, {0, 1, 2}, "d"));
  REQUIRE(sent.size() == 6);
  CHECK(static_cast<PmixReply>(getInt(sent[5].second, "status", -1)) == PmixReply::ok);
}

// Under --keep-going a PMIx_Spawn process that fails is in no collective of the whole job: the
// wildcard stands for the job's ranks. Every job-wide connect or group construct failed after it.
TEST_CASE("pmix collectives: a spawned process's failure does not fail the whole job's collectives") {
  CollectiveSends s;
  s.c.onMessage(0, coll(1, {-1}));
  s.c.onRankFailed(4, /*job_rank=*/false);  // the first spawned process (the job has ranks 0-3)
  CHECK(s.msgs.empty());  // the round stays open
  s.c.onMessage(1, coll(2, {-1}));
  REQUIRE(s.msgs.size() == 2);
  CHECK(s.status(0) == PmixReply::ok);
  s.c.onRankFailed(3, /*job_rank=*/true);  // a rank of the job: now the wildcard includes it
  s.c.onMessage(0, coll(3, {-1}));
  REQUIRE(s.msgs.size() == 3);
  CHECK(s.status(2) == PmixReply::proc_lost);
}

// A collective of the whole job on 2,000 nodes sent its result once per node, each copy sealed
// for its link: 2,000 x the result in the frontend's queues. Most nodes: one broadcast.
TEST_CASE("pmix collectives: a result for most nodes is broadcast once, one for a few is sent to each") {
  std::vector<std::pair<int, Json>> sent;
  std::vector<Json> broadcasts;
  // Ranks 0-7, one per node.
  PmixCollectives c([&](int node, const Json& m) { sent.emplace_back(node, m); },
                    [&](const Json& m) { broadcasts.push_back(m); },
                    [](int rank) { return rank >= 0 && rank < 8 ? rank : -1; }, [] { return 8; });
  for (int n = 0; n < 8; ++n) c.onMessage(n, coll(100 + n, {-1}, std::string(1, static_cast<char>('a' + n))));
  CHECK(sent.empty());
  REQUIRE(broadcasts.size() == 1);
  CHECK(bytesAt(broadcasts[0], "d") == "abcdefgh");
  CHECK(static_cast<PmixReply>(getInt(broadcasts[0], "status", -1)) == PmixReply::ok);
  REQUIRE(broadcasts[0]["ids"].size() == 8);
  for (int n = 0; n < 8; ++n) CHECK(broadcasts[0]["ids"][std::to_string(n)] == 100 + n);
  // Half the nodes still share one broadcast; the others find no id of theirs in it.
  for (int n = 0; n < 4; ++n) c.onMessage(n, coll(200 + n, {0, 1, 2, 3}));
  REQUIRE(broadcasts.size() == 2);
  CHECK_FALSE(broadcasts[1]["ids"].contains("4"));
  // Two of eight: one answer each.
  c.onMessage(5, coll(300, {5, 6}, "x"));
  c.onMessage(6, coll(301, {5, 6}, "y"));
  CHECK(broadcasts.size() == 2);
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].second["id"] == 300);
  CHECK(sent[1].second["id"] == 301);
  CHECK(bytesAt(sent[1].second, "d") == "xy");
  CHECK(sent[0].second["cid"] == sent[1].second["cid"]);
}
