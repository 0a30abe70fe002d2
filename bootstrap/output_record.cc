#include "bootstrap/output_record.h"

#include "bootstrap/frame_codec.h"

namespace tlaunch {

namespace {
constexpr size_t kRecordHeaderBytes = 1 + 4 + 1;  // tag, rank, stream and kind
}  // namespace

std::string encodeOutputFrame(int rank, int stream, std::string_view bytes, OutputKind kind) {
  const auto payload = static_cast<uint32_t>(kRecordHeaderBytes + bytes.size());
  const auto r = static_cast<uint32_t>(rank);
  std::string frame;
  frame.reserve(kFrameHeaderBytes + payload);
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>((payload >> shift) & 0xff));
  frame.push_back(static_cast<char>(kOutputRecordTag));
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>((r >> shift) & 0xff));
  frame.push_back(static_cast<char>((stream & 0x0f) | static_cast<int>(kind)));
  frame.append(bytes);
  return frame;
}

bool isOutputRecord(std::string_view payload) {
  return !payload.empty() && static_cast<unsigned char>(payload.front()) == kOutputRecordTag;
}

std::optional<OutputRecord> decodeOutputRecord(std::string_view payload) {
  if (payload.size() < kRecordHeaderBytes || !isOutputRecord(payload)) return std::nullopt;
  uint32_t rank = 0;
  for (size_t i = 1; i <= 4; ++i) rank = (rank << 8) | static_cast<unsigned char>(payload[i]);
  const auto byte = static_cast<unsigned char>(payload[5]);
  const int stream = byte & 0x0f;
  const auto kind = static_cast<OutputKind>(byte & 0xf0);
  if (rank > 0x7fffffffu || (stream != 1 && stream != 2)) return std::nullopt;
  if (kind != OutputKind::lines && kind != OutputKind::continued && kind != OutputKind::update &&
      kind != OutputKind::unfinished)
    return std::nullopt;
  return OutputRecord{static_cast<int>(rank), stream, kind, payload.substr(kRecordHeaderBytes)};
}

}  // namespace tlaunch
