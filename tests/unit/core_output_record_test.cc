// Output records carry the kind of their segment (lines, a continued piece, a progress update,
// an unfinished line shown while the rank waits).
#include <catch2/catch.hpp>

#include "bootstrap/frame_codec.h"
#include "bootstrap/output_record.h"

using namespace tlaunch;

TEST_CASE("output records keep stream and kind apart, unknown kinds are refused") {
  for (auto kind : {OutputKind::lines, OutputKind::continued, OutputKind::update, OutputKind::unfinished}) {
    for (int stream : {1, 2}) {
      const std::string payload = encodeOutputFrame(5, stream, "abc\r", kind).substr(kFrameHeaderBytes);
      auto r = decodeOutputRecord(payload);
      REQUIRE(r);
      CHECK(r->stream == stream);
      CHECK(r->kind == kind);
      CHECK(r->bytes == "abc\r");
    }
  }
  std::string payload = encodeOutputFrame(5, 1, "x").substr(kFrameHeaderBytes);
  for (int high : {0x40, 0x80, 0xf0}) {
    payload[5] = static_cast<char>(high | 1);
    CHECK_FALSE(decodeOutputRecord(payload));
  }
  payload[5] = static_cast<char>(0x10 | 3);  // a known kind with an unknown stream
  CHECK_FALSE(decodeOutputRecord(payload));
}
