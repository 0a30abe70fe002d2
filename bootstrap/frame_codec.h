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
inline constexpr size_t kDefaultMaxFrameBytes = 64u << 20;

std::string encodeFrame(std::string_view payload);

class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_bytes = kDefaultMaxFrameBytes) : max_(max_frame_bytes) {}
  void feed(const char* data, size_t n) { buf_.append(data, n); }
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
