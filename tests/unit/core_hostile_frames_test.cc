// What a stranger or a broken peer can send the control plane: deep nesting, forged lengths,
// truncations, frames at and past the size limits. Each is an error value, never a crash, an
// exception or a large allocation.
#include <catch2/catch.hpp>

#include <string>

#include "bootstrap/bounded_cbor.h"
#include "bootstrap/frame_codec.h"
#include "bootstrap/message.h"
#include "bootstrap/output_record.h"

using namespace tlaunch;

namespace {

std::string bytes(std::initializer_list<unsigned> values) {
  std::string out;
  for (unsigned v : values) out.push_back(static_cast<char>(v));
  return out;
}

// `levels` arrays, each holding the next; the innermost is empty.
std::string nestedArrays(size_t levels) { return std::string(levels - 1, '\x81') + '\x80'; }

// A message {"t": "x", "a": <arrays>} nesting `levels` containers in all (the map is one).
std::string messageNested(size_t levels) {
  return bytes({0xa2, 0x61, 't', 0x61, 'x', 0x61, 'a'}) + nestedArrays(levels - 1);
}

std::string frameHeader(uint32_t n) {
  return bytes({(n >> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff});
}

}  // namespace

TEST_CASE("hostile CBOR: 1 MiB of nested arrays is refused, not a stack overflow", "[frame][hostile]") {
  const std::string deep(1u << 20, '\x81');
  auto m = decodeMessage(deep);
  REQUIRE_FALSE(m);
  CHECK(m.error().code == Errc::protocol);
  CHECK_THAT(m.error().message, Catch::Contains("deeper than 32"));
  // Indefinite-length arrays and maps nest the same way.
  CHECK_FALSE(decodeMessage(std::string(1u << 20, '\x9f')));
  std::string maps;
  for (int i = 0; i < 200000; ++i) maps += bytes({0xa1, 0x61, 'k'});
  CHECK_FALSE(decodeMessage(maps));
  // The same bytes as a whole frame through the decoder, as a connection sees them.
  FrameDecoder decoder(kAuthenticatedMaxFrameBytes);
  const std::string frame = encodeFrame(deep);
  decoder.feed(frame.data(), frame.size());
  auto payload = decoder.next();
  REQUIRE(payload);
  REQUIRE(*payload);
  CHECK_FALSE(decodeMessage(**payload));
}

TEST_CASE("hostile CBOR: nesting of 32 levels is accepted, 33 refused", "[frame][hostile]") {
  CHECK(parseBoundedCbor(nestedArrays(32)));
  auto deep = parseBoundedCbor(nestedArrays(33));
  REQUIRE_FALSE(deep);
  CHECK_THAT(deep.error().message, Catch::Contains("deeper than 32"));
  CHECK(decodeMessage(messageNested(32)));
  CHECK_FALSE(decodeMessage(messageNested(33)));
  // The cap is a parameter.
  CHECK(parseBoundedCbor(nestedArrays(3), 3));
  CHECK_FALSE(parseBoundedCbor(nestedArrays(4), 3));
  // Depth is nesting, not the number of containers: many siblings are fine.
  std::string wide = bytes({0x99, 0x03, 0xe8});  // an array of 1,000 empty arrays
  wide += std::string(1000, '\x80');
  auto w = parseBoundedCbor(wide);
  REQUIRE(w);
  CHECK(w->size() == 1000);
}

TEST_CASE("hostile CBOR: forged lengths are refused without allocating them", "[frame][hostile]") {
  // Arrays and maps of 2^64-2, 2^32-1 and 1,000 elements in a payload of a few bytes.
  for (const std::string& forged : {bytes({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x80}),
                                    bytes({0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x61, 't'}),
                                    bytes({0x9a, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02}),
                                    bytes({0xba, 0xff, 0xff, 0xff, 0xff, 0x61, 't', 0x61, 'x'}),
                                    bytes({0x99, 0x03, 0xe8, 0x01})}) {
    auto r = parseBoundedCbor(forged);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("declares"));
    CHECK_FALSE(decodeMessage(forged));
  }
  // nlohmann reads a count of 2^64-1 as "indefinite length": then the missing end is the error.
  CHECK_FALSE(parseBoundedCbor(bytes({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80})));
  CHECK_FALSE(parseBoundedCbor(bytes({0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x61, 't', 0x01})));
  // A declared count that fits the payload but is not all there: truncated.
  CHECK_FALSE(parseBoundedCbor(bytes({0xa3, 0x61, 'a', 0x01, 0x61, 'b', 0x02})));
  // Byte and text strings declaring 2^64-1 or 2^32-1 bytes: read only as far as the payload goes.
  for (const std::string& forged : {bytes({0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'a'}),
                                    bytes({0x7b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'a'}),
                                    bytes({0x5a, 0xff, 0xff, 0xff, 0xff, 'a', 'b'}),
                                    bytes({0xa1, 0x61, 't', 0x7a, 0x7f, 0xff, 0xff, 0xff, 'x'})}) {
    CHECK_FALSE(parseBoundedCbor(forged));
    CHECK_FALSE(decodeMessage(forged));
  }
  // Honest lengths at the bound still parse: 4 one-byte elements in a 5-byte payload.
  CHECK(parseBoundedCbor(bytes({0x84, 0x01, 0x02, 0x03, 0x04})));
}

TEST_CASE("hostile CBOR: tags, trailing bytes, wrong types", "[frame][hostile]") {
  const std::string valid = encodeMessage({{"t", "ping"}});
  CHECK(decodeMessage(valid));
  CHECK_FALSE(decodeMessage(valid + '\x00'));                      // trailing bytes
  CHECK_FALSE(decodeMessage(bytes({0xc1, 0x1a, 0, 0, 0, 0})));      // a tag (epoch time)
  CHECK_FALSE(decodeMessage(bytes({0xa1, 0x01, 0x61, 'x'})));       // an integer key
  CHECK_FALSE(decodeMessage(bytes({0xa1, 0x61, 't', 0xf6})));       // "t": null
  CHECK_FALSE(decodeMessage(bytes({0xa1, 0x61, 't', 0x41, 'x'})));  // "t": a byte string
  CHECK_FALSE(decodeMessage(bytes({0xff})));                        // a lone "break"
  CHECK_FALSE(decodeMessage(bytes({0x7f, 0x61, 'a', 0x01, 0xff})));  // an indefinite text string with an integer chunk
}

TEST_CASE("hostile CBOR: every truncation of a valid message is an error", "[frame][hostile]") {
  const Json message = {{"t", "prepare"},
                        {"seq", 1ull << 40},
                        {"neg", -70000},
                        {"f", 0.5},
                        {"ok", true},
                        {"none", nullptr},
                        {"d", binary(std::string("\0\xff\x81", 3))},
                        {"launch", {{"argv", {"python3", "train.py"}}, {"env", {{"A", "1"}}}}}};
  const std::string payload = encodeMessage(message);
  for (size_t cut = 0; cut < payload.size(); ++cut) {
    INFO("cut at " << cut);
    CHECK_FALSE(decodeMessage(payload.substr(0, cut)));
  }
  auto whole = decodeMessage(payload);
  REQUIRE(whole);
  CHECK(*whole == message);
}

TEST_CASE("frame limits: 4 KiB before authentication, raised after", "[frame][hostile]") {
  static_assert(kPreAuthMaxFrameBytes == 4096);
  static_assert(kAuthenticatedMaxFrameBytes <= 0xffffffffu, "a frame length must fit its 4-byte header");
  static_assert(kAuthenticatedMaxFrameBytes >= 16u << 20, "a 1,000-node PMIx fence must fit");

  SECTION("exactly the limit passes, one more byte is refused before buffering") {
    FrameDecoder at(kPreAuthMaxFrameBytes);
    const std::string frame = encodeFrame(std::string(kPreAuthMaxFrameBytes, 'x'));
    at.feed(frame.data(), frame.size());
    auto f = at.next();
    REQUIRE(f);
    REQUIRE(*f);
    CHECK((*f)->size() == kPreAuthMaxFrameBytes);

    FrameDecoder over(kPreAuthMaxFrameBytes);
    const std::string header = frameHeader(kPreAuthMaxFrameBytes + 1);
    over.feed(header.data(), header.size());
    auto g = over.next();
    REQUIRE_FALSE(g);
    CHECK_THAT(g.error().message, Catch::Contains("4097 bytes exceeds the limit of 4096"));
    // The error sticks: the stream cannot be resynchronised.
    CHECK_FALSE(over.next());
  }

  SECTION("a connection raises the limit after authentication") {
    FrameDecoder decoder(kPreAuthMaxFrameBytes);
    const std::string hello = encodeFrame(encodeMessage({{"t", "hello"}}));
    const std::string big = encodeFrame(std::string(100000, 'y'));
    decoder.feed(hello.data(), hello.size());
    REQUIRE(decoder.next().value());
    decoder.setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
    CHECK(decoder.maxFrameBytes() == kAuthenticatedMaxFrameBytes);
    decoder.feed(big.data(), big.size());
    auto f = decoder.next();
    REQUIRE(f);
    REQUIRE(*f);
    CHECK((*f)->size() == 100000);
  }

  SECTION("a big frame is refused while the limit is the pre-authentication one") {
    FrameDecoder decoder(kPreAuthMaxFrameBytes);
    const std::string big = encodeFrame(std::string(5000, 'y'));
    decoder.feed(big.data(), 100);
    CHECK_FALSE(decoder.next());
  }

  SECTION("the authenticated limit: at it waits for the bytes, past it and 4 GiB refused") {
    FrameDecoder at(kAuthenticatedMaxFrameBytes);
    const std::string h = frameHeader(static_cast<uint32_t>(kAuthenticatedMaxFrameBytes));
    at.feed(h.data(), h.size());
    auto f = at.next();
    REQUIRE(f);
    CHECK_FALSE(*f);
    for (uint32_t n : {static_cast<uint32_t>(kAuthenticatedMaxFrameBytes + 1), 0xffffffffu}) {
      FrameDecoder over(kAuthenticatedMaxFrameBytes);
      const std::string header = frameHeader(n);
      over.feed(header.data(), header.size());
      CHECK_FALSE(over.next());
    }
  }

  SECTION("an empty frame is an empty payload, and an empty payload is no message") {
    FrameDecoder decoder(kPreAuthMaxFrameBytes);
    const std::string empty = frameHeader(0);
    decoder.feed(empty.data(), empty.size());
    auto f = decoder.next();
    REQUIRE(f);
    REQUIRE(*f);
    CHECK((*f)->empty());
    CHECK_FALSE(decodeMessage(**f));
    CHECK_FALSE(decodeOutputRecord(**f));
  }
}

TEST_CASE("hostile output records: every truncation and bad header is refused", "[frame][hostile]") {
  const std::string payload = encodeOutputFrame(5, 1, "hello\n").substr(kFrameHeaderBytes);
  for (size_t cut = 0; cut < 6; ++cut) CHECK_FALSE(decodeOutputRecord(payload.substr(0, cut)));
  for (size_t cut = 6; cut <= payload.size(); ++cut) {
    const std::string prefix = payload.substr(0, cut);  // the record's bytes are a view into it
    auto r = decodeOutputRecord(prefix);
    REQUIRE(r);
    CHECK(r->bytes == std::string_view("hello\n").substr(0, cut - 6));
  }
  for (unsigned stream : {0u, 3u, 0xffu}) {
    std::string p = payload;
    p[5] = static_cast<char>(stream);
    CHECK_FALSE(decodeOutputRecord(p));
  }
  std::string negative = payload;
  negative[1] = static_cast<char>(0xff);
  CHECK_FALSE(decodeOutputRecord(negative));
}
