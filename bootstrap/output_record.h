#pragma once
// Rank output, the control plane's bulk traffic, travels in its own frame payload instead of a
// CBOR message: a tag byte no CBOR map starts with (maps are 0xa0..0xbf), the rank (4 bytes, big
// endian), the stream (1 = stdout, 2 = stderr), then the bytes. CBOR's byte-string decoding in
// nlohmann copies byte by byte; this is a slice of the frame.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tlaunch {

inline constexpr unsigned char kOutputRecordTag = 0x01;

struct OutputRecord {
  int rank = 0;
  int stream = 1;
  std::string_view bytes;  // into the payload it was decoded from
};

// A whole frame (length header included), ready for Connection::sendEncoded.
std::string encodeOutputFrame(int rank, int stream, std::string_view bytes);

bool isOutputRecord(std::string_view payload);
// nullopt when the payload is not a well-formed output record.
std::optional<OutputRecord> decodeOutputRecord(std::string_view payload);

}  // namespace tlaunch
