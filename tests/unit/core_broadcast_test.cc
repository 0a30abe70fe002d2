// Broadcasts sealed once for every link (bootstrap/frame_cipher.h, bootstrap/connection.h): each
// receiver opens the same bytes, a daemon of the tree passes them on unchanged, and a broadcast
// dropped, replayed, altered, swapped or renumbered on a link ends that link as an integrity
// failure, as any other frame does.
#include <catch2/catch.hpp>

#include <asio.hpp>

#include "bootstrap/connection.h"
#include "bootstrap/frame_cipher.h"

using namespace tlaunch;
using Dir = FrameCipher::Direction;

namespace {
const std::string kJobSecret = "0123456789abcdef0123456789abcdef";

// One sealed link in memory: `tx` (the frontend's end, sealing toward the daemon) and `rx` (the
// daemon's end, opening what comes), with handshake nonces of its own.
struct Link {
  std::shared_ptr<Connection> tx, rx;
  std::vector<Json> got;
  std::vector<Connection::BroadcastFrame> delivered;  // deliveringBroadcast() at each message
  std::string closed;

  Link(asio::io_context& io, const std::string& nonce) {
    auto pipe = memoryBytePipe(io, "frontend", "daemon");
    tx = Connection::create(std::move(pipe.first), kAuthenticatedMaxFrameBytes);
    rx = Connection::create(std::move(pipe.second), kAuthenticatedMaxFrameBytes);
    tx->sealFromNow(std::make_unique<FrameCipher>(kJobSecret, nonce, "client", Dir::to_daemon));
    rx->openFromNow(std::make_unique<FrameCipher>(kJobSecret, nonce, "client", Dir::to_daemon));
    tx->start([](Json&&) {}, [](const std::string&) {});
    rx->start(
        [this](Json&& m) {
          delivered.push_back(rx->deliveringBroadcast());
          got.push_back(std::move(m));
        },
        [this](const std::string& why) { closed = why; });
  }
  std::vector<std::string> types() const {
    std::vector<std::string> t;
    for (const auto& m : got) t.push_back(getString(m, "t"));
    return t;
  }
};

// Runs the io_context until nothing is left to do: a memory pipe has no timers and no sockets, so
// it goes idle exactly when every frame written has been read and handled (or a link closed).
// The bound only stops a loop that never goes idle; it is no budget for a slow or loaded machine,
// where a fixed run_for(2 s) stopped halfway through the frames.
void runUntilIdle(asio::io_context& io) {
  io.restart();
  io.run_for(std::chrono::minutes(2));
  CHECK(io.stopped());  // went idle rather than hit the bound
}

Connection::BroadcastFrame broadcastOf(FrameCipher& sealer, uint64_t number, const Json& msg) {
  auto b = std::make_shared<Connection::Broadcast>();
  b->number = number;
  b->frame = sealer.sealBroadcast(number, encodeMessage(msg), kFrameHeaderBytes);
  writeFrameHeader(b->frame, b->frame.size() - kFrameHeaderBytes);
  return b;
}
}  // namespace

TEST_CASE("broadcast: sealed once, opened on every link in order with the link's own frames, passed on unchanged") {
  asio::io_context io;
  Link a(io, "nonce-a"), b(io, "nonce-b"), below(io, "nonce-c");
  FrameCipher sealer(kJobSecret, FrameCipher::ForBroadcasts{});
  const std::string big(300000, 'm');  // a fence's result: far larger than one read
  auto first = broadcastOf(sealer, 1, {{"t", "fence_done"}, {"d", binary(big)}});
  auto second = broadcastOf(sealer, 2, {{"t", "ping"}});
  for (Link* l : {&a, &b}) {
    l->tx->send({{"t", "before"}});
    l->tx->sendBroadcast(first);
    l->tx->send({{"t", "between"}});
    l->tx->sendBroadcast(second, /*bulk=*/true);
    l->tx->send({{"t", "after"}});
  }
  runUntilIdle(io);
  for (Link* l : {&a, &b}) {
    INFO(l->closed);
    // The bulk broadcast leaves after the control frame queued behind it, as any bulk frame.
    CHECK(l->types() == std::vector<std::string>{"before", "fence_done", "between", "after", "ping"});
    REQUIRE(l->got.size() == 5);
    CHECK(bytesOf(l->got[1]["d"]) == big);
    // Only the broadcasts say so, and what they say is the very frame the frontend sealed.
    CHECK_FALSE(l->delivered[0]);
    REQUIRE(l->delivered[1]);
    CHECK(l->delivered[1]->number == 1);
    CHECK(l->delivered[1]->frame == first->frame);
    CHECK_FALSE(l->delivered[2]);
    REQUIRE(l->delivered[4]);
    CHECK(l->delivered[4]->frame == second->frame);
    CHECK(l->rx->isOpen());
  }
  // A daemon of the tree passes what it received on to its child as it came.
  below.tx->sendBroadcast(a.delivered[1]);
  runUntilIdle(io);
  CHECK(below.types() == std::vector<std::string>{"fence_done"});
  CHECK(below.closed.empty());
}

TEST_CASE("broadcast: a cipher toward the frontend opens none, a broadcast sealer seals no link frames") {
  FrameCipher sealer(kJobSecret, FrameCipher::ForBroadcasts{});
  const std::string sealed = sealer.sealBroadcast(7, "payload");
  FrameCipher daemon_side(kJobSecret, "n", "c", Dir::to_daemon);
  auto opened = daemon_side.openBroadcast(7, sealed);
  REQUIRE(opened);
  CHECK(opened->view() == "payload");
  CHECK_FALSE(daemon_side.openBroadcast(8, sealed));  // another number: another nonce
  FrameCipher frontend_side(kJobSecret, "n", "c", Dir::to_frontend);
  auto none = frontend_side.openBroadcast(7, sealed);
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message, Catch::Contains("takes none"));
  CHECK_FALSE(FrameCipher(std::string(32, 'x'), "n", "c", Dir::to_daemon).openBroadcast(7, sealed));  // another job
}

TEST_CASE("broadcast: dropped, replayed, altered, swapped or renumbered on the wire -> integrity failure") {
  FrameCipher sealer(kJobSecret, FrameCipher::ForBroadcasts{});
  const auto b1 = broadcastOf(sealer, 1, {{"t", "one"}});
  const auto b2 = broadcastOf(sealer, 2, {{"t", "two"}});
  // What a peer that knows the link's key (the test) writes on the raw wire.
  auto run = [&](const std::function<std::string(FrameCipher&)>& wire) {
    asio::io_context io;
    auto pipe = memoryBytePipe(io, "frontend", "daemon");
    auto rx = Connection::create(std::move(pipe.second), kAuthenticatedMaxFrameBytes);
    rx->openFromNow(std::make_unique<FrameCipher>(kJobSecret, "n", "c", Dir::to_daemon));
    std::vector<std::string> got;
    std::string closed;
    rx->start([&](Json&& m) { got.push_back(getString(m, "t")); }, [&](const std::string& why) { closed = why; });
    FrameCipher link(kJobSecret, "n", "c", Dir::to_daemon);
    const std::string bytes = wire(link);
    pipe.first->write(asio::buffer(bytes), [](const asio::error_code&, size_t) {});
    runUntilIdle(io);
    return std::make_pair(got, closed);
  };
  // The wire's parts in the order given (the link's counter advances with each sealed one; the
  // operands of + would be sealed in no fixed order).
  struct Part {
    enum { envelope, message, raw } kind;
    uint64_t number = 0;
    std::string text;
  };
  auto wire = [](const std::vector<Part>& parts) {
    return [parts](FrameCipher& link) {
      std::string out;
      for (const auto& p : parts) {
        if (p.kind == Part::envelope) out += encodeFrame(link.seal(broadcastEnvelope(p.number)));
        else if (p.kind == Part::message) out += encodeFrame(link.seal(encodeMessage({{"t", p.text}})));
        else out += p.text;
      }
      return out;
    };
  };
  auto env = [](uint64_t n) { return Part{Part::envelope, n, {}}; };
  auto msg = [](const std::string& t) { return Part{Part::message, 0, t}; };
  auto raw = [](const std::string& bytes) { return Part{Part::raw, 0, bytes}; };

  SECTION("as sent: both arrive") {
    auto [got, closed] = run(wire({env(1), raw(b1->frame), env(2), raw(b2->frame), msg("after")}));
    CHECK(got == std::vector<std::string>{"one", "two", "after"});
    CHECK(closed.empty());
  }
  SECTION("the broadcast dropped after its envelope") {
    auto [got, closed] = run(wire({env(1), msg("after")}));
    CHECK(got.empty());
    CHECK_THAT(closed, Catch::Contains("integrity failure: broadcast 1"));
  }
  SECTION("a broadcast replayed behind a new envelope of an old number") {
    auto [got, closed] = run(wire({env(1), raw(b1->frame), env(1), raw(b1->frame)}));
    CHECK(got == std::vector<std::string>{"one"});
    CHECK_THAT(closed, Catch::Contains("integrity failure: broadcast 1 after broadcast 1"));
  }
  SECTION("two broadcasts swapped") {
    auto [got, closed] = run(wire({env(1), raw(b2->frame)}));
    CHECK(got.empty());
    CHECK_THAT(closed, Catch::Contains("integrity failure"));
  }
  SECTION("a bit of the broadcast flipped") {
    std::string bad = b1->frame;
    bad[kFrameHeaderBytes + 2] = static_cast<char>(bad[kFrameHeaderBytes + 2] ^ 0x40);
    auto [got, closed] = run(wire({env(1), raw(bad)}));
    CHECK(got.empty());
    CHECK_THAT(closed, Catch::Contains("integrity failure"));
  }
  SECTION("a broadcast without its envelope") {
    auto [got, closed] = run(wire({raw(b1->frame)}));
    CHECK(got.empty());
    CHECK_THAT(closed, Catch::Contains("integrity failure"));
  }
  SECTION("an envelope of the wrong size") {
    auto [got, closed] = run([&](FrameCipher& l) {
      std::string out = encodeFrame(l.seal(broadcastEnvelope(1) + "x"));
      return out + b1->frame;
    });
    CHECK(got.empty());
    CHECK_THAT(closed, Catch::Contains("malformed broadcast envelope"));
  }
}

TEST_CASE("broadcast: a link that is not sealed yet cannot carry one") {
  asio::io_context io;
  auto pipe = memoryBytePipe(io, "frontend", "daemon");
  auto tx = Connection::create(std::move(pipe.first));
  std::string closed;
  tx->start([](Json&&) {}, [&](const std::string& why) { closed = why; });
  FrameCipher sealer(kJobSecret, FrameCipher::ForBroadcasts{});
  tx->sendBroadcast(broadcastOf(sealer, 1, {{"t", "ping"}}));
  CHECK_FALSE(tx->isOpen());
  CHECK_THAT(closed, Catch::Contains("not sealed"));
}
