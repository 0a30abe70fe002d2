// An interior daemon's children (daemon/tree_children.h) over real loopback TCP, each child's
// side of the handshake scripted as tlaunchd does it: only a node that proves the job secret
// and that the frontend placed below this one becomes a child; its messages go up tagged with
// its number, a relayed one only from its own subtree; messages go down to the right child;
// a child that goes away is reported lost, unless the job is ending. And the subtree's fence
// share (daemon/subtree_fence.h).
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/connection.h"
#include "bootstrap/frame_cipher.h"
#include "bootstrap/frame_codec.h"
#include "bootstrap/output_record.h"
#include "daemon/subtree_fence.h"
#include "daemon/tree_children.h"
#include "tests/unit/scripted_tree_child.h"
#include "tlaunch/version.h"

using namespace tlaunch;

namespace {

const std::string kSecret(64, 'a');

// A child daemon's side, proving `name`/`index` with the job secret (or another one).
class ScriptedChild : public testing::ScriptedChild {
 public:
  ScriptedChild(asio::io_context& io, int port, std::string name, int index, std::string secret = kSecret)
      : testing::ScriptedChild(io, port, std::move(name), index, std::move(secret)) {}
};

// Node 0 of a 7-node radix-2 tree: children 2 ("n2", below it 6) and 3 ("n3").
struct Parent {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
  std::vector<Json> up;
  std::vector<std::string> output;
  std::vector<std::pair<int, std::string>> lost;
  TreeChildren children{io, kSecret, hooks()};

  Parent() { accept(); }
  TreeChildren::Hooks hooks() {
    TreeChildren::Hooks h;
    h.up = [this](Json&& m, bool) { up.push_back(std::move(m)); };
    h.up_output = [this](const Connection::Frame& f) { output.push_back(*f); };
    h.lost = [this](int node, const std::string& why) { lost.emplace_back(node, why); };
    return h;
  }
  void accept() {
    acceptor.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket s) {
      if (ec) return;
      children.adopt(std::move(s));
      accept();
    });
  }
  void place() { children.place(0, TreeShape{7, 2}, {{2, "n2"}, {3, "n3"}}); }
  int port() const { return acceptor.local_endpoint().port(); }
  template <class Pred>
  bool runUntil(Pred done, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < until) io.run_for(std::chrono::milliseconds(5));
    return done();
  }
};

}  // namespace

TEST_CASE("tree children: a placed child that proves the secret carries messages both ways") {
  Parent p;
  p.place();
  ScriptedChild c(p.io, p.port(), "n2", 2);
  REQUIRE(p.runUntil([&] { return c.welcomed; }));
  c.send({{"t", "ping"}});  // this link's liveness only: not carried up
  c.send({{"t", "exit"}, {"r", 5}});
  c.sendOutput(5, "hello\n");
  REQUIRE(p.runUntil([&] { return p.up.size() == 1 && p.output.size() == 1; }));
  CHECK(getString(p.up[0], "t") == "exit");
  CHECK(p.up[0][kSourceTag] == 2);
  auto record = decodeOutputRecord(std::string_view(p.output[0]).substr(kFrameHeaderBytes));
  REQUIRE(record);
  CHECK(record->rank == 5);
  CHECK(record->bytes == "hello\n");

  // Down: a message for node 6 goes to child 2 (its parent); one for node 1 has no way here.
  auto frame = [](const Json& m) { return Connection::frameOf(m); };
  CHECK(p.children.sendToward(6, frame({{"t", "credit"}, {kDestinationTag, 6}}), false));
  CHECK_FALSE(p.children.sendToward(1, frame({{"t", "credit"}, {kDestinationTag, 1}}), false));
  p.children.sendAll(frame({{"t", "ping"}, {kEveryNodeTag, true}}), false);
  REQUIRE(p.runUntil([&] { return c.received.size() == 2; }));
  CHECK(c.received[0][kDestinationTag] == 6);
  CHECK(getString(c.received[1], "t") == "ping");
}

TEST_CASE("tree children: this daemon's own heartbeat reaches each child, for that link only") {
  Parent p;
  p.place();
  ScriptedChild a(p.io, p.port(), "n2", 2);
  ScriptedChild b(p.io, p.port(), "n3", 3);
  REQUIRE(p.runUntil([&] { return a.welcomed && b.welcomed; }));
  p.children.pingAll();
  REQUIRE(p.runUntil([&] { return a.received.size() == 1 && b.received.size() == 1; }));
  for (const auto* c : {&a, &b}) {
    CHECK(getString(c->received[0], "t") == "ping");
    CHECK_FALSE(c->received[0].contains(kEveryNodeTag));  // not carried on below the child
  }
}

TEST_CASE("tree children: a relayed message must come from the child's own subtree") {
  Parent p;
  p.place();
  ScriptedChild c(p.io, p.port(), "n2", 2);
  REQUIRE(p.runUntil([&] { return c.welcomed; }));
  c.send({{"t", "exit"}, {kSourceTag, 4}});  // node 4 is below node 1, not below node 2
  c.send({{"t", "exit"}, {kSourceTag, 6}});  // node 6 is node 2's child
  REQUIRE(p.runUntil([&] { return !p.up.empty(); }));
  p.runUntil([] { return false; }, std::chrono::milliseconds(100));
  REQUIRE(p.up.size() == 1);
  CHECK(p.up[0][kSourceTag] == 6);
}

TEST_CASE("tree children: strangers, nodes placed elsewhere and impostors are turned away") {
  Parent p;
  p.place();
  ScriptedChild wrong_secret(p.io, p.port(), "n2", 2, std::string(64, 'b'));
  ScriptedChild not_ours(p.io, p.port(), "n4", 4);      // proves the secret, but belongs below node 1
  ScriptedChild misnamed(p.io, p.port(), "n9", 3);      // index 3 is n3
  REQUIRE(p.runUntil([&] { return wrong_secret.closed && not_ours.closed && misnamed.closed; }));
  CHECK_FALSE(wrong_secret.welcomed);
  CHECK_FALSE(not_ours.welcomed);
  CHECK_FALSE(misnamed.welcomed);
  CHECK(p.children.openChildren() == 0);
  CHECK(p.lost.empty());  // never children: nothing to report
  // The real n3 still gets in, once.
  ScriptedChild n3(p.io, p.port(), "n3", 3);
  ScriptedChild twice(p.io, p.port(), "n3", 3);
  REQUIRE(p.runUntil([&] { return (n3.welcomed && twice.closed) || (twice.welcomed && n3.closed); }));
  CHECK(p.children.openChildren() == 1);
}

TEST_CASE("tree children: a flood of strangers does not push out a child waiting for its place") {
  // From another host, or from the child's own (a proved child is never the one to go while a
  // stranger waits).
  const std::string flood_from = GENERATE("127.0.0.2", "127.0.0.1");
  INFO("strangers from " << flood_from);
  Parent p;
  ScriptedChild c(p.io, p.port(), "n2", 2);  // from 127.0.0.1, proves the secret, waits for place()
  REQUIRE(p.runUntil([&] { return p.children.heldForPlace() == 1; }));
  std::vector<asio::ip::tcp::socket> flood;
  for (size_t i = 0; i < TreeChildren::kMaxUnplaced + 40; ++i) {
    asio::ip::tcp::socket s(p.io);
    s.open(asio::ip::tcp::v4());
    s.bind({asio::ip::make_address(flood_from), 0});
    s.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(p.port())});
    flood.push_back(std::move(s));
    if (i % 32 == 0) p.io.run_for(std::chrono::milliseconds(10));
  }
  p.io.run_for(std::chrono::milliseconds(300));  // every stranger accepted; the cap exceeded 40 times
  CHECK_FALSE(c.closed);
  p.place();
  CHECK(p.runUntil([&] { return c.welcomed || c.closed; }));
  CHECK(c.welcomed);
  CHECK_FALSE(c.closed);
}

TEST_CASE("tree children: a child that connects before the frontend placed its parent waits for it") {
  Parent p;
  ScriptedChild c(p.io, p.port(), "n3", 3);
  p.runUntil([] { return false; }, std::chrono::milliseconds(200));
  CHECK_FALSE(c.welcomed);
  p.place();
  REQUIRE(p.runUntil([&] { return c.welcomed; }));
}

TEST_CASE("tree children: a child that goes away is lost, unless the job is ending") {
  Parent p;
  p.place();
  ScriptedChild a(p.io, p.port(), "n2", 2);
  ScriptedChild b(p.io, p.port(), "n3", 3);
  REQUIRE(p.runUntil([&] { return a.welcomed && b.welcomed; }));
  a.close();
  REQUIRE(p.runUntil([&] { return !p.lost.empty(); }));
  CHECK(p.lost[0].first == 2);
  p.children.expectEnd();
  b.close();
  REQUIRE(p.runUntil([&] { return p.children.openChildren() == 0; }));
  CHECK(p.lost.size() == 1);
}

TEST_CASE("tree children: a silent child is closed and reported after the heartbeat timeout") {
  Parent p;
  p.place();
  ScriptedChild a(p.io, p.port(), "n2", 2);
  REQUIRE(p.runUntil([&] { return a.welcomed; }));
  p.runUntil([] { return false; }, std::chrono::milliseconds(60));
  p.children.checkLiveness(std::chrono::milliseconds(50));
  REQUIRE(p.lost.size() == 1);
  CHECK(p.lost[0].first == 2);
  CHECK(p.lost[0].second.find("no heartbeat") != std::string::npos);
  REQUIRE(p.runUntil([&] { return a.closed; }));
}

TEST_CASE("subtree fence: this node's share and each child's leave as one message with every part") {
  SubtreeFence f;
  const Json own = {{"t", "fence"}, {"seq", 4}, {"collect", true}, {"d", binary("AA")}};
  const Json leaf = {{"t", "fence"}, {"seq", 4}, {"collect", true}, {"d", binary("BB")}};
  const Json subtree = {{"t", "fence"},
                        {"seq", 4},
                        {"collect", true},
                        {"parts", Json::array({Json::array({3, binary("CC")}), Json::array({7, binary("DD")})})}};
  CHECK_FALSE(f.add(own, 0, 3));
  CHECK_FALSE(f.add(leaf, 2, 3));
  CHECK(f.inProgress() == 1);
  auto combined = f.add(subtree, 3, 3);
  REQUIRE(combined);
  CHECK(getInt(*combined, "seq") == 4);
  std::map<int, std::string> parts;
  for (const auto& p : (*combined)["parts"]) parts[p[0].get<int>()] = bytesOf(p[1]);
  CHECK(parts == std::map<int, std::string>{{0, "AA"}, {2, "BB"}, {3, "CC"}, {7, "DD"}});
  CHECK(f.inProgress() == 0);
  // A late or repeated share of a fence that completed starts nothing new.
  CHECK_FALSE(f.add(leaf, 2, 3));
  CHECK(f.inProgress() == 0);
  // A fence that ends without us (a failed rank) is forgotten, and stays so.
  Json five = own;
  five["seq"] = 5;
  CHECK_FALSE(f.add(five, 0, 2));
  f.forget(5);
  CHECK(f.inProgress() == 0);
  CHECK_FALSE(f.add(five, 2, 2));
  CHECK(f.inProgress() == 0);
}

TEST_CASE("subtree fence: a contributor counts once, a second share does not complete the fence early") {
  SubtreeFence f;
  const Json share = {{"t", "fence"}, {"seq", 9}, {"collect", true}, {"d", binary("BB")}};
  CHECK_FALSE(f.add(share, 2, 3));
  CHECK_FALSE(f.add(share, 2, 3));  // child 2 again: still waiting for this node and child 3
  CHECK_FALSE(f.add(share, 0, 3));
  auto combined = f.add(share, 3, 3);
  REQUIRE(combined);
  CHECK((*combined)["parts"].size() == 3);
}

// A child that opens fences without end (256 gatherings) must not make the job's real fence
// wait for ever: with no room to gather, shares go up one by one, every share of that fence.
TEST_CASE("subtree fence: with no room to gather a fence its shares go up one by one instead of being dropped") {
  SubtreeFence f;
  for (int seq = 1000; seq < 1256; ++seq)
    CHECK_FALSE(f.add({{"t", "fence"}, {"seq", seq}, {"collect", true}, {"d", binary("junk")}}, 2, 3));
  CHECK(f.inProgress() == 256);
  const Json own = {{"t", "fence"}, {"seq", 1}, {"collect", true}, {"d", binary("AA")}};
  auto up = f.add(own, 0, 3);
  REQUIRE(up);
  CHECK(getInt(*up, "seq") == 1);
  REQUIRE((*up)["parts"].size() == 1);
  CHECK((*up)["parts"][0][0] == 0);
  CHECK(bytesOf((*up)["parts"][0][1]) == "AA");
  auto next = f.add({{"t", "fence"}, {"seq", 1}, {"collect", true}, {"d", binary("BB")}}, 3, 3);
  REQUIRE(next);  // the same fence's next share follows the first
  CHECK((*next)["parts"][0][0] == 3);
  CHECK(f.inProgress() == 256);
}

// --keep-going: a node whose ranks all failed never contributes again. A gathering would wait
// for it for ever, and every surviving rank of the subtree with it; the frontend answers each
// node "lost" once the shares reach it.
TEST_CASE("subtree fence: after a rank of the job failed, what was gathered goes up and later shares follow alone") {
  SubtreeFence f;
  CHECK_FALSE(f.add({{"t", "fence"}, {"seq", 3}, {"collect", true}, {"d", binary("AA")}}, 0, 3));
  CHECK_FALSE(f.add({{"t", "fence"}, {"seq", 3}, {"collect", true}, {"d", binary("BB")}}, 2, 3));
  auto up = f.passAll();
  REQUIRE(up.size() == 1);
  CHECK(getInt(up[0], "seq") == 3);
  CHECK(up[0]["parts"].size() == 2);
  CHECK(f.inProgress() == 0);
  auto later = f.add({{"t", "fence"}, {"seq", 4}, {"collect", false}, {"d", binary("CC")}}, 0, 3);
  REQUIRE(later);  // a new fence is not gathered either
  CHECK(getBool(*later, "passed"));
  REQUIRE((*later)["parts"].size() == 1);
  CHECK((*later)["parts"][0][0] == 0);
  CHECK(f.inProgress() == 0);
  // The frontend answers each share "lost" now, so none is late: not even one of a fence
  // this node saw end.
  f.forget(5);
  CHECK(f.add({{"t", "fence"}, {"seq", 5}, {"collect", false}, {"d", binary("DD")}}, 2, 3));
}

// Two levels down: the shares a child passes on one by one all come from that child. Counted by
// contributor, its second one would be taken for a repeat and dropped, and the fence would never
// complete at the frontend.
TEST_CASE("subtree fence: shares a child passed on one by one are passed on here too, with what was gathered") {
  SubtreeFence f;
  CHECK_FALSE(f.add({{"t", "fence"}, {"seq", 8}, {"collect", true}, {"d", binary("AA")}}, 0, 3));
  auto part = [](int node, const char* d) { return Json::array({node, binary(d)}); };
  const Json first = {{"t", "fence"}, {"seq", 8}, {"collect", true}, {"passed", true}, {"parts", Json::array({part(2, "B")})}};
  const Json second = {{"t", "fence"}, {"seq", 8}, {"collect", true}, {"passed", true}, {"parts", Json::array({part(5, "C")})}};
  auto a = f.add(first, 2, 3);
  REQUIRE(a);
  std::set<int> nodes;
  for (const auto& p : (*a)["parts"]) nodes.insert(p[0].get<int>());
  CHECK(nodes == std::set<int>{0, 2});  // this node's share went with the child's first
  auto b = f.add(second, 2, 3);
  REQUIRE(b);
  REQUIRE((*b)["parts"].size() == 1);
  CHECK((*b)["parts"][0][0] == 5);
  auto c = f.add({{"t", "fence"}, {"seq", 8}, {"collect", true}, {"d", binary("D")}}, 3, 3);
  REQUIRE(c);  // the other child's share of that fence follows alone too
  CHECK((*c)["parts"][0][0] == 3);
  CHECK(f.inProgress() == 0);
}

TEST_CASE("tree children: a child's fence share may name only nodes of its own subtree") {
  Parent p;
  p.place();
  ScriptedChild c(p.io, p.port(), "n2", 2);
  REQUIRE(p.runUntil([&] { return c.welcomed; }));
  auto part = [](int node) { return Json::array({node, binary("x")}); };
  c.send({{"t", "fence"}, {"seq", 1}, {"parts", Json::array({part(2), part(3)})}});  // 3 is its sibling
  c.send({{"t", "fence"}, {"seq", 1}, {"parts", Json::array({part(2), part(6)})}});  // 6 is below it
  REQUIRE(p.runUntil([&] { return !p.up.empty(); }));
  p.runUntil([] { return false; }, std::chrono::milliseconds(100));
  REQUIRE(p.up.size() == 1);
  CHECK(p.up[0]["parts"][1][0] == 6);
}

// Counted by contributor, a share relayed as a grandchild's would stand in for a sibling's and
// complete this node's fence without it: every rank of the job would then wait in that fence.
TEST_CASE("tree children: a child relays no fence share of a node below it on its own") {
  Parent p;
  p.place();
  ScriptedChild c(p.io, p.port(), "n2", 2);
  REQUIRE(p.runUntil([&] { return c.welcomed; }));
  c.send({{"t", "fence"}, {"seq", 1}, {"d", binary("x")}, {kSourceTag, 6}});  // 6 is below it
  c.send({{"t", "fence"}, {"seq", 1}, {"d", binary("x")}});                   // its own share
  REQUIRE(p.runUntil([&] { return !p.up.empty(); }));
  p.runUntil([] { return false; }, std::chrono::milliseconds(100));
  REQUIRE(p.up.size() == 1);
  CHECK(p.up[0][kSourceTag] == 2);
}

// A share over what one frame carries, sent as it was, was refused by the daemon above (or the
// frontend) as a frame over the limit: this node taken for lost, and dropped by a restart.
TEST_CASE("subtree fence: a share too big for a frame goes up as its size") {
  const Json small = {{"t", "fence"}, {"seq", 3}, {"collect", true}, {"d", binary("abc")}};
  CHECK(fenceThatFits(small) == small);
  const Json one = {{"t", "fence"}, {"seq", 3}, {"collect", true}, {"d", binary(std::string(kMaxCollectedBytes + 1, 'x'))}};
  const Json cut = fenceThatFits(one);
  CHECK(cut["too_big"] == kMaxCollectedBytes + 1);
  CHECK(cut["seq"] == 3);
  CHECK_FALSE(cut.contains("d"));
  const std::string half(kMaxCollectedBytes / 2 + 1, 'y');
  const Json parts = {{"t", "fence"}, {"seq", 4}, {"collect", true},
                      {"parts", Json::array({Json::array({1, binary(half)}), Json::array({2, binary(half)})})}};
  CHECK(fenceThatFits(parts)["too_big"] == 2 * half.size());
}
