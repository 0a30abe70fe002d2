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
// Before authentication a peer is a stranger: a challenge, a hello and a welcome fit in 4 KiB.
inline constexpr size_t kPreAuthMaxFrameBytes = 4096;
// After it, every legitimate frame fits (output pieces are at most 1 MiB; a fence result holds
// every rank's contribution), and a confused peer still cannot make us buffer more than this.
inline constexpr size_t kDefaultMaxFrameBytes = 256u << 20;

std::string encodeFrame(std::string_view payload);

class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_bytes = kDefaultMaxFrameBytes) : max_(max_frame_bytes) {}
  void feed(const char* data, size_t n) { buf_.append(data, n); }
  void setMaxFrameBytes(size_t max_frame_bytes) { max_ = max_frame_bytes; }
  // The next complete payload, nullopt if more bytes are needed, or an error (oversize).
  // After an error the stream is unusable: the connection must be dropped.
  Result<std::optional<std::string>> next();
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  size_t max_;
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace tlaunch
