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

void writeFrameHeader(std::string& frame, size_t payload_bytes) {
  const auto n = static_cast<uint32_t>(payload_bytes);
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) frame[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
}

Result<std::optional<std::string>> FrameDecoder::next() {
  auto view = nextView();
  if (!view) return tl::unexpected<Error>(view.error());
  if (!*view) return std::optional<std::string>{};
  return std::optional<std::string>{std::string(**view)};
}

Result<std::optional<std::string_view>> FrameDecoder::nextView() {
  // Compact once the consumed prefix dominates, so the buffer does not grow without bound. Done
  // here, before the next frame is handed out, so that the last view stays valid until now.
  if (pos_ > 65536 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  if (buffered() < kFrameHeaderBytes) return std::optional<std::string_view>{};
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(buf_[pos_ + i])); };
  uint32_t n = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
  if (n > max_) {
    return fail(Errc::protocol, "frame of " + std::to_string(n) + " bytes exceeds the limit of " +
                                    std::to_string(max_) + " bytes");
  }
  if (buffered() < kFrameHeaderBytes + n) return std::optional<std::string_view>{};
  std::string_view payload = std::string_view(buf_).substr(pos_ + kFrameHeaderBytes, n);
  pos_ += kFrameHeaderBytes + n;
  return std::optional<std::string_view>{payload};
}

}  // namespace tlaunch
