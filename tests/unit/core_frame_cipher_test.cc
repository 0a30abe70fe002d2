// Sealed frames: session keys per connection and direction; a replayed, reordered, altered or
// foreign frame fails to open; and a Connection ends with an "integrity failure" on one.
#include <catch2/catch.hpp>

#include <asio.hpp>

#include "bootstrap/connection.h"
#include "bootstrap/frame_cipher.h"

using namespace tlaunch;
using Dir = FrameCipher::Direction;

namespace {
const std::string kSecret = "0123456789abcdef0123456789abcdef";
const std::string kServerNonce(32, 's'), kClientNonce(32, 'c');

FrameCipher cipher(Dir d, const std::string& secret = kSecret, const std::string& server_nonce = kServerNonce) {
  return FrameCipher(secret, server_nonce, kClientNonce, d);
}
}  // namespace

TEST_CASE("frame cipher: both ends agree, frame after frame") {
  auto tx = cipher(Dir::to_daemon);
  auto rx = cipher(Dir::to_daemon);
  for (const std::string& msg : std::vector<std::string>{"", "a", "hello frames", std::string(100000, 'z')}) {
    const std::string sealed = tx.seal(msg);
    CHECK(sealed.size() == msg.size() + kSealOverheadBytes);
    CHECK(sealed.find("hello") == std::string::npos);
    auto opened = rx.open(sealed);
    REQUIRE(opened);
    CHECK(*opened == msg);
  }
}

TEST_CASE("frame cipher: replayed, reordered, altered, truncated and foreign frames fail") {
  auto tx = cipher(Dir::to_frontend);
  const std::string f0 = tx.seal("first"), f1 = tx.seal("second");
  {
    auto rx = cipher(Dir::to_frontend);
    REQUIRE(rx.open(f0));
    auto replay = rx.open(f0);
    REQUIRE_FALSE(replay);
    CHECK_THAT(replay.error().message, Catch::Contains("integrity failure"));
  }
  {
    auto rx = cipher(Dir::to_frontend);
    CHECK_FALSE(rx.open(f1));  // out of order
  }
  for (size_t i = 0; i < f0.size(); ++i) {
    auto rx = cipher(Dir::to_frontend);
    std::string bad = f0;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    CHECK_FALSE(rx.open(bad));
  }
  CHECK_FALSE(cipher(Dir::to_frontend).open(f0.substr(0, 10)));
  CHECK_FALSE(cipher(Dir::to_daemon).open(f0));                            // the other direction's key
  CHECK_FALSE(cipher(Dir::to_frontend, std::string(32, 'x')).open(f0));     // another job's secret
  CHECK_FALSE(cipher(Dir::to_frontend, kSecret, std::string(32, 'S')).open(f0));  // another connection
}

TEST_CASE("a connection that opens sealed frames drops a replayed one as an integrity failure") {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket raw(io);
  raw.connect(acceptor.local_endpoint());
  auto conn = Connection::create(acceptor.accept(), kAuthenticatedMaxFrameBytes);
  conn->openFromNow(std::make_unique<FrameCipher>(kSecret, kServerNonce, kClientNonce, Dir::to_frontend));
  std::vector<std::string> got;
  std::string closed;
  conn->start([&](Json&& m) { got.push_back(getString(m, "t")); }, [&](const std::string& why) { closed = why; });

  auto tx = cipher(Dir::to_frontend);
  const std::string ping = encodeFrame(tx.seal(encodeMessage({{"t", "ping"}})));
  const std::string exit = encodeFrame(tx.seal(encodeMessage({{"t", "exit"}})));
  asio::write(raw, asio::buffer(ping));
  asio::write(raw, asio::buffer(exit));
  asio::write(raw, asio::buffer(ping));  // replayed
  asio::write(raw, asio::buffer(encodeFrame(tx.seal(encodeMessage({{"t", "after"}})))));
  io.run_for(std::chrono::seconds(2));
  CHECK(got == std::vector<std::string>{"ping", "exit"});
  CHECK_THAT(closed, Catch::Contains("integrity failure"));
  CHECK_FALSE(conn->isOpen());
}
