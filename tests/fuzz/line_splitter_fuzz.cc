// libFuzzer harness: the daemon's line splitter on rank output cut into arbitrary reads.
// Checks: the reads' boundaries never change the lines; every line ends in '\n'; what is held
// back stays under the cap; no byte other than line ends is lost or added.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/line_splitter.h"

namespace {

// The input without '\r' and '\n'.
std::string textOf(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '\r' && c != '\n') out += c;
  }
  return out;
}

// The output's lines without their '\n' and without the marker of a cut piece (a cut piece is
// exactly `max_line` bytes, then the marker: longer than any uncut line, so never ambiguous).
std::string textOfLines(std::string_view out, size_t max_line) {
  std::string text;
  size_t pos = 0;
  while (pos < out.size()) {
    const size_t eol = out.find('\n', pos);
    if (eol == std::string_view::npos) std::abort();  // every line ends in '\n'
    std::string_view line = out.substr(pos, eol - pos);
    if (line.size() == max_line + tlaunch::kCutMarker.size() && line.ends_with(tlaunch::kCutMarker)) {
      line.remove_suffix(tlaunch::kCutMarker.size());
    }
    if (line.size() > max_line) std::abort();
    text += line;
    pos = eol + 1;
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const size_t max_line = input.ConsumeIntegralInRange<size_t>(1, 64);
  const uint32_t chunk_seed = input.ConsumeIntegral<uint32_t>();
  const std::string stream = input.ConsumeRemainingBytesAsString();

  std::string whole;
  tlaunch::LineSplitter at_once(max_line);
  at_once.feed(stream, whole);
  at_once.finish(whole);

  // Reads of 1 to 32 bytes (a pipe read never returns 0 bytes without EOF).
  std::string chunked;
  tlaunch::LineSplitter piecewise(max_line);
  uint32_t state = chunk_seed | 1u;
  for (size_t pos = 0; pos < stream.size();) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const size_t n = std::min<size_t>(stream.size() - pos, 1 + state % 32);
    piecewise.feed(std::string_view(stream).substr(pos, n), chunked);
    if (piecewise.pending() > max_line) std::abort();
    pos += n;
  }
  piecewise.finish(chunked);

  if (whole != chunked) std::abort();
  if (textOfLines(whole, max_line) != textOf(stream)) std::abort();
  return 0;
}
