#pragma once
// Control-plane framing: a 4-byte big-endian payload length, then the payload (CBOR).
// The decoder is incremental and rejects a length over the limit before buffering it, so a
// hostile or confused peer costs at most one limit's worth of memory and never a crash.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tlaunch/result.h"

namespace tlaunch {

inline constexpr size_t kFrameHeaderBytes = 4;
// Before authentication a peer is a stranger: the handshake's frames are a few hundred bytes.
inline constexpr size_t kPreAuthMaxFrameBytes = 4096;
// After authentication: every legitimate frame, with room to spare. The largest is a PMIx
// fence's fence_done, every node's contribution in one message (a 1,000-node Open MPI modex
// can exceed 16 MiB; 256 MiB covers about ten times that) — still a cap on what one peer can
// make a receiver buffer.
inline constexpr size_t kAuthenticatedMaxFrameBytes = 256u << 20;
// The most data (a fence's or a collective's result) one message may carry: it must fit in one
// frame with the message around it.
inline constexpr size_t kMaxCollectedBytes = kAuthenticatedMaxFrameBytes - (64u << 10);
// What a decoder allows when nobody says otherwise (connections that do not yet apply the two
// limits above).
inline constexpr size_t kDefaultMaxFrameBytes = 64u << 20;

std::string encodeFrame(std::string_view payload);
// Writes the header of a frame of `payload_bytes` into the first kFrameHeaderBytes of `frame`.
void writeFrameHeader(std::string& frame, size_t payload_bytes);

class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_bytes = kDefaultMaxFrameBytes) : max_(max_frame_bytes) {}
  void feed(const char* data, size_t n) { buf_.append(data, n); }
  // The next complete payload, nullopt if more bytes are needed, or an error (oversize).
  // After an error the stream is unusable: the connection must be dropped.
  Result<std::optional<std::string>> next();
  // The same, as a view into the decoder's buffer: valid until the next feed() or next*().
  Result<std::optional<std::string_view>> nextView();
  size_t buffered() const { return buf_.size() - pos_; }
  // Applies to every frame not yet returned: a connection raises it once its peer authenticated.
  void setMaxFrameBytes(size_t max_frame_bytes) { max_ = max_frame_bytes; }
  size_t maxFrameBytes() const { return max_; }

 private:
  size_t max_;
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace tlaunch
