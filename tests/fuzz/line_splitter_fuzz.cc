// libFuzzer harness: the daemon's line splitter on rank output cut into arbitrary reads.
// Checks: the segments joined are exactly the input (no byte lost, added or altered); the reads'
// boundaries never change what the segments hold; a continued piece is the cap, or up to 3 bytes
// less where it ends before a UTF-8 character; an
// update ends in a lone '\r'; no line in a lines segment is over the cap; what is held back
// stays under the cap (plus a held '\r').
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/line_splitter.h"

namespace {

using tlaunch::OutputKind;
using tlaunch::OutputSegment;

std::string joined(const std::vector<OutputSegment>& segs) {
  std::string all;
  for (const auto& s : segs) all += s.bytes;
  return all;
}

void checkShapes(const std::vector<OutputSegment>& segs, size_t max_line) {
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& s = segs[i];
    if (s.bytes.empty()) std::abort();
    // A cut moves back at most 3 bytes, to the start of a UTF-8 character, and never to nothing.
    if (s.kind == OutputKind::continued && (s.bytes.size() > max_line || s.bytes.size() + 3 < max_line)) std::abort();
    if (s.kind == OutputKind::update && s.bytes.back() != '\r') std::abort();
    if (s.kind == OutputKind::lines && i + 1 < segs.size() && s.bytes.back() != '\n') std::abort();
    if (s.kind == OutputKind::lines) {  // no line over the cap (plus its "\r\n") in a lines segment
      size_t from = 0;
      for (size_t nl; (nl = s.bytes.find('\n', from)) != std::string::npos; from = nl + 1)
        if (nl + 1 - from > max_line + 2) std::abort();
      if (s.bytes.size() - from > max_line + 2) std::abort();
    }
  }
}

// Adjacent `lines` segments may be merged differently by different chunkings: compare the kinds
// and bytes of everything else, and the concatenation.
std::vector<OutputSegment> normalised(const std::vector<OutputSegment>& segs) {
  std::vector<OutputSegment> out;
  for (const auto& s : segs) {
    if (s.kind == OutputKind::lines && !out.empty() && out.back().kind == OutputKind::lines) out.back().bytes += s.bytes;
    else out.push_back(s);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const size_t max_line = input.ConsumeIntegralInRange<size_t>(1, 64);
  const uint32_t chunk_seed = input.ConsumeIntegral<uint32_t>();
  const std::string stream = input.ConsumeRemainingBytesAsString();

  std::vector<OutputSegment> whole;
  tlaunch::LineSplitter at_once(max_line);
  at_once.feed(stream, whole);
  at_once.finish(whole);

  // Reads of 0 to 32 bytes.
  std::vector<OutputSegment> chunked;
  tlaunch::LineSplitter piecewise(max_line);
  uint32_t state = chunk_seed | 1u;
  for (size_t pos = 0; pos < stream.size();) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const size_t n = std::min<size_t>(stream.size() - pos, state % 33);
    piecewise.feed(std::string_view(stream).substr(pos, n), chunked);
    if (piecewise.pending() > max_line + 1) std::abort();
    pos += n;
  }
  piecewise.finish(chunked);

  checkShapes(whole, max_line);
  checkShapes(chunked, max_line);
  if (joined(whole) != stream || joined(chunked) != stream) std::abort();
  const auto a = normalised(whole), b = normalised(chunked);
  if (a.size() != b.size()) std::abort();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].bytes != b[i].bytes) std::abort();
  return 0;
}
