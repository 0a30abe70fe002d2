#include <catch2/catch.hpp>

#include <random>

#include "daemon/line_splitter.h"

using namespace tlaunch;

namespace {
using Segs = std::vector<OutputSegment>;
constexpr auto L = OutputKind::lines;
constexpr auto U = OutputKind::update;
constexpr auto C = OutputKind::continued;

Segs split(std::initializer_list<std::string_view> chunks, bool finish = true, size_t cap = kMaxLineBytes) {
  LineSplitter s(cap);
  Segs out;
  for (auto c : chunks) s.feed(c, out);
  if (finish) s.finish(out);
  return out;
}

std::string joined(const Segs& segs) {
  std::string all;
  for (const auto& s : segs) all += s.bytes;
  return all;
}
}  // namespace

TEST_CASE("line splitter: only whole lines come out until the end", "[lines]") {
  LineSplitter s;
  Segs out;
  s.feed("hel", out);
  REQUIRE(out.empty());
  s.feed("lo\nwor", out);
  REQUIRE(out == Segs{{L, "hello\n"}});
  s.feed("ld", out);
  REQUIRE(out.size() == 1);
  s.finish(out);
  REQUIRE(out == Segs{{L, "hello\nworld"}});  // the partial last line, as it was
}

TEST_CASE("line splitter: adjacent lines are one segment, CRLF is a line end, also across reads", "[lines]") {
  REQUIRE(split({"a\r\nb\r\n"}) == Segs{{L, "a\r\nb\r\n"}});
  REQUIRE(split({"a\r", "\nb\n"}) == Segs{{L, "a\r\nb\n"}});
  REQUIRE(split({"\n\n"}) == Segs{{L, "\n\n"}});
}

TEST_CASE("line splitter: a lone CR ends a progress update, not a line", "[lines]") {
  // tqdm writes "\r" before each state and "\n" after the last one.
  // Updates in a row are one segment, each state ending in its "\r" (the frontend shows the
  // last; --output-dir files get every byte).
  REQUIRE(split({"\r 10%", "\r 20%", "\r100%\n"}) == Segs{{U, "\r 10%\r 20%\r"}, {L, "100%\n"}});
  REQUIRE(split({"10%\r20%\r30%\n"}) == Segs{{U, "10%\r20%\r"}, {L, "30%\n"}});
  // A CR at the end of a read is decided by the next read, or by the end of the stream.
  REQUIRE(split({"10%\r", "20%\r"}) == Segs{{U, "10%\r20%\r"}});
  REQUIRE(split({"x\r", "\r\n"}) == Segs{{U, "x\r"}, {L, "\r\n"}});
  REQUIRE(split({"a\nb\rc\rd\n"}) == Segs{{L, "a\n"}, {U, "b\rc\r"}, {L, "d\n"}});
  // A storm of bare CRs (a bar redrawn with nothing new) is one segment a read, not one per CR.
  const std::string storm(60000, '\r');
  REQUIRE(split({storm + "done\n"}) == Segs{{U, storm}, {L, "done\n"}});
}

TEST_CASE("line splitter: the unfinished line can be looked at without taking it", "[lines]") {
  LineSplitter s;
  std::vector<OutputSegment> out;
  s.feed("a\n(Pdb) ", out);
  CHECK(s.unfinished() == "(Pdb) ");
  s.feed("p x\n", out);  // looking took nothing: the whole line comes out once
  CHECK(s.unfinished().empty());
  REQUIRE(out == std::vector<OutputSegment>{{OutputKind::lines, "a\n(Pdb) p x\n"}});
  s.feed("50%\r", out);  // a held CR is part of it until the next read decides
  CHECK(s.unfinished() == "50%\r");
}

TEST_CASE("line splitter: a long line is cut between UTF-8 characters, never inside one", "[lines]") {
  LineSplitter s(8);
  std::vector<OutputSegment> out;
  s.feed("abcdefg\xe2\x96\x88h\n", out);  // the cap falls inside the 3-byte block character
  REQUIRE(out.size() == 2);
  CHECK(out[0] == OutputSegment{OutputKind::continued, "abcdefg"});
  CHECK(out[1] == OutputSegment{OutputKind::lines, "\xe2\x96\x88h\n"});
  out.clear();
  LineSplitter t(4);
  t.feed("\x80\x80\x80\x80\x80\x80\n", out);  // not UTF-8: cut at the cap as before
  REQUIRE_FALSE(out.empty());
  CHECK(out[0] == OutputSegment{OutputKind::continued, "\x80\x80\x80\x80"});
}

TEST_CASE("line splitter: where reads end never moves a UTF-8 cut", "[lines]") {
  // The character's first bytes arrive in one read and are already held when the rest comes.
  const std::string line = "abcdef\xf0\x9f\x98\x80gh\n";  // a 4-byte emoji across the cap of 8
  const Segs expected{{C, "abcdef"}, {L, "\xf0\x9f\x98\x80gh\n"}};
  for (size_t first = 0; first <= line.size(); ++first) {
    CAPTURE(first);
    LineSplitter s(8);
    std::vector<OutputSegment> out;
    s.feed(std::string_view(line).substr(0, first), out);
    s.feed(std::string_view(line).substr(first), out);
    s.finish(out);
    CHECK(out == expected);
  }
}

TEST_CASE("line splitter: binary bytes pass through unchanged", "[lines]") {
  std::string bin("\x00\x01\xff\xfe\x7f", 5);
  REQUIRE(split({bin + "\n"}) == Segs{{L, bin + "\n"}});
}

TEST_CASE("line splitter: a line over the cap comes in continued pieces, no byte dropped", "[lines]") {
  LineSplitter s(10);
  Segs out;
  s.feed("0123456789abcdefghij", out);
  s.feed("XYZ", out);
  REQUIRE(s.pending() <= 10);
  s.feed("\nnext\n", out);
  REQUIRE(out == Segs{{C, "0123456789"}, {C, "abcdefghij"}, {L, "XYZ\nnext\n"}});
  // Exactly the cap, then the newline: a whole line; one byte more is cut.
  REQUIRE(split({"0123456789\n"}, true, 10) == Segs{{L, "0123456789\n"}});
  REQUIRE(split({"0123456789A\n"}, true, 10) == Segs{{C, "0123456789"}, {L, "A\n"}});
}

TEST_CASE("line splitter: a 2 MB line arrives whole in 1 MiB pieces", "[lines]") {
  const std::string longline(2'000'000, 'x');
  const Segs segs = split({longline.substr(0, 123457), longline.substr(123457), "\n"});
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].kind == C);
  CHECK(segs[0].bytes.size() == kMaxLineBytes);
  CHECK(segs[1].kind == L);
  CHECK(joined(segs) == longline + "\n");
}

TEST_CASE("line splitter: any chunking of any input gives back exactly the input", "[lines]") {
  std::mt19937 rng(7);
  const std::string alphabet = "ab\r\n";
  for (int round = 0; round < 300; ++round) {
    std::string input;
    const int n = static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) input.push_back(alphabet[rng() % alphabet.size()]);
    LineSplitter s(7);
    Segs out;
    // Reads shorter and longer than the cap: both ways of finding the lines' run.
    const size_t max_read = round % 2 == 0 ? 9 : 40;
    for (size_t at = 0; at < input.size();) {
      const size_t len = std::min<size_t>(1 + rng() % max_read, input.size() - at);
      s.feed(std::string_view(input).substr(at, len), out);
      at += len;
      REQUIRE(s.pending() <= 8);  // the cap plus a held CR
    }
    s.finish(out);
    REQUIRE(joined(out) == input);
    for (size_t i = 0; i < out.size(); ++i) {
      const auto& seg = out[i];
      REQUIRE(!seg.bytes.empty());
      if (seg.kind == C) REQUIRE(seg.bytes.size() == 7);
      if (seg.kind == U) REQUIRE(seg.bytes.back() == '\r');
      if (seg.kind == L && i + 1 < out.size()) REQUIRE(seg.bytes.back() == '\n');
      if (seg.kind == L) {  // no line over the cap (7) plus its "\r\n" in a lines segment
        size_t from = 0;
        for (size_t nl; (nl = seg.bytes.find('\n', from)) != std::string::npos; from = nl + 1) REQUIRE(nl + 1 - from <= 9);
        REQUIRE(seg.bytes.size() - from <= 9);
      }
    }
  }
}
