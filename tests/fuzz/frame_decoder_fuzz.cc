// libFuzzer harness: the frame decoder on a byte stream cut into arbitrary chunks, each
// payload handed on as a connection does (output record or CBOR message). Checks that the
// chunking never changes what comes out.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bootstrap/frame_codec.h"
#include "bootstrap/message.h"
#include "bootstrap/output_record.h"

namespace {

struct Outcome {
  std::vector<std::string> payloads;
  bool failed = false;
};

// Drains every complete payload; raises the limit after the first, as a connection does once
// its peer has authenticated.
void drain(tlaunch::FrameDecoder& decoder, Outcome& out, size_t raised_limit) {
  while (!out.failed) {
    auto frame = decoder.next();
    if (!frame) {
      out.failed = true;
      return;
    }
    if (!*frame) return;
    if ((*frame)->size() > decoder.maxFrameBytes()) std::abort();
    if (tlaunch::isOutputRecord(**frame)) {
      (void)tlaunch::decodeOutputRecord(**frame);
    } else {
      (void)tlaunch::decodeMessage(**frame);
    }
    out.payloads.push_back(std::move(**frame));
    if (out.payloads.size() == 1) decoder.setMaxFrameBytes(raised_limit);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  // Small limits make the oversize path reachable with small inputs.
  const size_t first_limit = input.ConsumeIntegralInRange<size_t>(0, 300);
  const size_t raised_limit = input.ConsumeBool() ? tlaunch::kAuthenticatedMaxFrameBytes : first_limit * 2;
  const size_t chunk_seed = input.ConsumeIntegral<uint32_t>();
  const std::string stream = input.ConsumeRemainingBytesAsString();

  Outcome whole;
  tlaunch::FrameDecoder at_once(first_limit);
  at_once.feed(stream.data(), stream.size());
  drain(at_once, whole, raised_limit);

  // Chunk sizes from a small generator seeded by the input: 1 to 16 bytes, as reads of a socket.
  Outcome chunked;
  tlaunch::FrameDecoder piecewise(first_limit);
  uint32_t state = static_cast<uint32_t>(chunk_seed) | 1u;
  for (size_t pos = 0; pos < stream.size() && !chunked.failed;) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const size_t n = std::min<size_t>(stream.size() - pos, 1 + state % 16);
    piecewise.feed(stream.data() + pos, n);
    pos += n;
    drain(piecewise, chunked, raised_limit);
  }
  if (whole.payloads != chunked.payloads || whole.failed != chunked.failed) std::abort();
  if (!whole.failed && whole.payloads.empty() && at_once.buffered() != stream.size()) std::abort();
  return 0;
}
