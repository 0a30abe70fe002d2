#include "bootstrap/frame_codec.h"

namespace tlaunch {

std::string encodeFrame(std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  auto n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(payload);
  return out;
}

Result<std::optional<std::string>> FrameDecoder::next() {
  if (buffered() < kFrameHeaderBytes) return std::optional<std::string>{};
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(buf_[pos_ + i])); };
  uint32_t n = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
  if (n > max_) {
    return fail(Errc::protocol, "frame of " + std::to_string(n) + " bytes exceeds the limit of " +
                                    std::to_string(max_) + " bytes");
  }
  if (buffered() < kFrameHeaderBytes + n) return std::optional<std::string>{};
  std::string payload = buf_.substr(pos_ + kFrameHeaderBytes, n);
  pos_ += kFrameHeaderBytes + n;
  // Compact once the consumed prefix dominates, so the buffer does not grow without bound.
  if (pos_ > 65536 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return std::optional<std::string>{std::move(payload)};
}

}  // namespace tlaunch
