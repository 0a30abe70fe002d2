#include <catch2/catch.hpp>

#include "daemon/line_splitter.h"

using namespace tlaunch;

namespace {
std::string split(std::initializer_list<std::string_view> chunks, bool finish = true, size_t cap = kMaxLineBytes) {
  LineSplitter s(cap);
  std::string out;
  for (auto c : chunks) s.feed(c, out);
  if (finish) s.finish(out);
  return out;
}
}  // namespace

TEST_CASE("line splitter: only whole lines come out until the end", "[lines]") {
  LineSplitter s;
  std::string out;
  s.feed("hel", out);
  REQUIRE(out.empty());
  s.feed("lo\nwor", out);
  REQUIRE(out == "hello\n");
  s.feed("ld", out);
  REQUIRE(out == "hello\n");
  s.finish(out);
  REQUIRE(out == "hello\nworld\n");  // the partial last line is flushed at exit
}

TEST_CASE("line splitter: CR, CRLF split across chunks, and lone CR", "[lines]") {
  REQUIRE(split({"a\r\nb\r\n"}) == "a\nb\n");
  REQUIRE(split({"a\r", "\nb\n"}) == "a\nb\n");  // CRLF across two reads is one line end
  REQUIRE(split({"10%\r20%\r30%\n"}) == "10%\n20%\n30%\n");  // progress bar redraws
  REQUIRE(split({"\n\n"}) == "\n\n");
}

TEST_CASE("line splitter: binary bytes pass through unchanged", "[lines]") {
  std::string bin("\x00\x01\xff\xfe\x7f", 5);
  REQUIRE(split({bin + "\n"}) == bin + "\n");
}

TEST_CASE("line splitter: a line over the cap is cut and marked, memory stays bounded", "[lines]") {
  LineSplitter s(10);
  std::string out;
  s.feed("0123456789abcdefghij", out);
  s.feed("XYZ", out);
  REQUIRE(s.pending() <= 10);
  s.finish(out);
  REQUIRE(out == "0123456789" + std::string(kCutMarker) + "\nabcdefghij" + std::string(kCutMarker) + "\nXYZ\n");
}

TEST_CASE("line splitter: a very long line is delivered intact below the cap", "[lines]") {
  std::string longline(500000, 'x');
  REQUIRE(split({longline.substr(0, 123457), longline.substr(123457), "\n"}) == longline + "\n");
}
