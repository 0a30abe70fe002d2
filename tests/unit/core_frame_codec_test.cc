#include <catch2/catch.hpp>

#include <random>

#include "bootstrap/frame_codec.h"
#include "bootstrap/message.h"
#include "bootstrap/output_record.h"

using namespace tlaunch;

TEST_CASE("frame codec: round trip of several frames fed byte by byte", "[frame]") {
  std::string wire;
  std::vector<Json> sent = {{{"t", "hello"}, {"n", 1}},
                            {{"t", "out"}, {"d", binary(std::string("a\0b\xff\n", 5))}},
                            {{"t", "x"}, {"big", std::string(100000, 'z')}}};
  for (const auto& m : sent) wire += encodeFrame(encodeMessage(m));
  FrameDecoder dec;
  std::vector<Json> got;
  for (char c : wire) {
    dec.feed(&c, 1);
    for (;;) {
      auto f = dec.next();
      REQUIRE(f);
      if (!*f) break;
      auto m = decodeMessage(**f);
      REQUIRE(m);
      got.push_back(*m);
    }
  }
  REQUIRE(got == sent);
  REQUIRE(bytesOf(got[1]["d"]) == std::string("a\0b\xff\n", 5));
  REQUIRE(dec.buffered() == 0);
}

TEST_CASE("frame codec: every truncation of a valid frame waits for more, never fails", "[frame]") {
  std::string frame = encodeFrame(encodeMessage({{"t", "prepare"}, {"argv", {"python3", "train.py"}}}));
  for (size_t cut = 0; cut < frame.size(); ++cut) {
    FrameDecoder dec;
    dec.feed(frame.data(), cut);
    auto f = dec.next();
    REQUIRE(f);
    REQUIRE_FALSE(f->has_value());
  }
}

TEST_CASE("frame codec: an oversize length is rejected before it is buffered", "[frame]") {
  FrameDecoder dec(1024);
  const char header[4] = {0x00, 0x00, 0x08, 0x01};  // 2049 bytes
  dec.feed(header, 4);
  auto f = dec.next();
  REQUIRE_FALSE(f);
  REQUIRE(f.error().code == Errc::protocol);
  REQUIRE_THAT(f.error().message, Catch::Contains("exceeds the limit"));
}

TEST_CASE("messages: garbage, non-maps and untyped maps are errors, not crashes", "[frame]") {
  REQUIRE_FALSE(decodeMessage(std::string("\xff\xfe\x00garbage", 10)));
  REQUIRE_FALSE(decodeMessage(""));
  REQUIRE_FALSE(decodeMessage(encodeMessage(Json::array({1, 2, 3}))));
  REQUIRE_FALSE(decodeMessage(encodeMessage({{"x", 1}})));
  REQUIRE_FALSE(decodeMessage(encodeMessage({{"t", 5}})));
  // Every truncation of a valid CBOR payload is rejected cleanly.
  std::string payload = encodeMessage({{"t", "exit"}, {"r", 3}, {"tail", {"a", "b"}}});
  for (size_t cut = 0; cut < payload.size(); ++cut) REQUIRE_FALSE(decodeMessage(payload.substr(0, cut)));
  REQUIRE(decodeMessage(payload));
}

TEST_CASE("messages: typed accessors never throw on a peer's wrong types", "[frame]") {
  Json m = {{"t", "exit"}, {"r", "three"}, {"code", 7}, {"ok", 1}};
  REQUIRE(getInt(m, "r", -1) == -1);
  REQUIRE(getInt(m, "code") == 7);
  REQUIRE(getBool(m, "ok", false) == false);
  REQUIRE(getString(m, "missing", "d") == "d");
  const Json& c = m;  // a const message: reading an absent field must not be nlohmann's undefined behaviour
  REQUIRE(bytesAt(c, "d").empty());
  REQUIRE(bytesAt(c, "code").empty());
  REQUIRE(bytesAt(Json::array({1, 2}), "d").empty());
  REQUIRE(bytesAt(Json{{"d", binary("ab")}}, "d") == "ab");
}

TEST_CASE("frame codec: random garbage never crashes the decoder (fuzz)", "[frame]") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 2000; ++round) {
    FrameDecoder dec(4096);
    std::string junk(rng() % 512, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    // Sometimes a plausible header in front, so payloads reach the CBOR parser.
    if (round % 2) junk = encodeFrame(junk.substr(0, junk.size() / 2)) + junk;
    dec.feed(junk.data(), junk.size());
    for (int i = 0; i < 64; ++i) {
      auto f = dec.next();
      if (!f || !*f) break;
      (void)decodeMessage(**f);  // an error or a message, never an exception or a crash
    }
  }
  SUCCEED();
}

TEST_CASE("frame codec: flipping any byte of a valid message gives an error or a message", "[frame]") {
  std::string payload = encodeMessage({{"t", "prepare"}, {"launch", {{"argv", {"a", "b"}}, {"n", 3}}}});
  for (size_t i = 0; i < payload.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string p = payload;
      p[i] = static_cast<char>(p[i] ^ (1 << bit));
      (void)decodeMessage(p);
    }
  SUCCEED();
}

TEST_CASE("rank output records: framed, decoded as slices, never mistaken for a message") {
  const std::string bytes("line one\n\0binary\xff\nlast", 22);
  const std::string frame = encodeOutputFrame(70000, 2, bytes);
  FrameDecoder decoder;
  decoder.feed(frame.data(), frame.size());
  auto payload = decoder.next();
  REQUIRE(payload);
  REQUIRE(*payload);
  REQUIRE(isOutputRecord(**payload));
  auto record = decodeOutputRecord(**payload);
  REQUIRE(record);
  CHECK(record->rank == 70000);
  CHECK(record->stream == 2);
  CHECK(record->bytes == bytes);
  auto empty = decodeOutputRecord(encodeOutputFrame(0, 1, "").substr(kFrameHeaderBytes));
  REQUIRE(empty);
  CHECK(empty->bytes.empty());

  // A control message is a CBOR map: never an output record, and the other way round.
  const std::string message = encodeMessage({{"t", "ping"}});
  CHECK_FALSE(isOutputRecord(message));
  CHECK_FALSE(decodeMessage(frame.substr(kFrameHeaderBytes)));

  // Malformed: too short, a stream other than 1/2, a rank past INT_MAX.
  std::string p = frame.substr(kFrameHeaderBytes);
  CHECK_FALSE(decodeOutputRecord(p.substr(0, 5)));
  std::string bad_stream = p;
  bad_stream[5] = 3;
  CHECK_FALSE(decodeOutputRecord(bad_stream));
  std::string bad_rank = p;
  bad_rank[1] = static_cast<char>(0x80);
  CHECK_FALSE(decodeOutputRecord(bad_rank));
}
