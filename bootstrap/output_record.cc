#include "bootstrap/output_record.h"

#include "bootstrap/frame_codec.h"

namespace tlaunch {

namespace {
constexpr size_t kRecordHeaderBytes = 1 + 4 + 1;  // tag, rank, stream
}  // namespace

std::string encodeOutputFrame(int rank, int stream, std::string_view bytes) {
  const auto payload = static_cast<uint32_t>(kRecordHeaderBytes + bytes.size());
  const auto r = static_cast<uint32_t>(rank);
  std::string frame;
  frame.reserve(kFrameHeaderBytes + payload);
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>((payload >> shift) & 0xff));
  frame.push_back(static_cast<char>(kOutputRecordTag));
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>((r >> shift) & 0xff));
  frame.push_back(static_cast<char>(stream));
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
  const int stream = static_cast<unsigned char>(payload[5]);
  if (rank > 0x7fffffffu || (stream != 1 && stream != 2)) return std::nullopt;
  return OutputRecord{static_cast<int>(rank), stream, payload.substr(kRecordHeaderBytes)};
}

}  // namespace tlaunch
