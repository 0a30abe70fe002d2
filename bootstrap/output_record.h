#pragma once
// Rank output, the control plane's bulk traffic, travels in its own frame payload instead of a
// CBOR message: a tag byte no CBOR map starts with (maps are 0xa0..0xbf), the rank (4 bytes, big
// endian), one byte holding the stream (low nibble: 1 = stdout, 2 = stderr) and the segment's kind
// (high nibble, OutputKind), then the bytes. CBOR's byte-string decoding in nlohmann copies byte by
// byte; this is a slice of the frame.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bootstrap/byte_buffer.h"

namespace tlaunch {

inline constexpr unsigned char kOutputRecordTag = 0x01;

// What the bytes of a record are (daemon/line_splitter.h makes them). The bytes are the rank's
// own, terminators included, so that --output-dir files can hold exactly what the rank wrote.
enum class OutputKind : unsigned char {
  lines = 0x00,      // one or more whole lines, each ending in "\n" or "\r\n"
  continued = 0x10,  // a piece of a line longer than the cap: more of the same line follows
  update = 0x20,     // a progress-bar state: a segment ended by a lone "\r"
  // The line so far, while the rank has written no more of it for a moment (a prompt waiting
  // for input, a bar between two states): shown, but not the rank's bytes for files or logs;
  // the same bytes come again, in their final kind, once the line is done.
  unfinished = 0x30,
};

struct OutputRecord {
  int rank = 0;
  int stream = 1;
  OutputKind kind = OutputKind::lines;
  std::string_view bytes;  // into the payload it was decoded from
};

// A record's payload kept by its receiver: the bytes are storage.substr(offset).
struct OwnedBytes {
  ByteBuffer storage;
  size_t offset = 0;
  std::string_view view() const { return storage.view().substr(offset); }
};

// What a record takes of its daemon's output credit window (and of the bytes a daemon holds before
// it stops reading the pipes): its bytes, and a share for the record itself. Counted by bytes
// alone, a storm of tiny records (a bar's bare "\r" written one at a time) let millions of them
// queue, each a frame and a queue entry of ~100 bytes: a daemon grew past 1 GB.
inline constexpr size_t kOutputRecordCost = 64;
inline constexpr size_t outputCreditCost(size_t bytes) { return bytes + kOutputRecordCost; }

// A whole frame (length header included), ready for Connection::sendEncoded.
std::string encodeOutputFrame(int rank, int stream, std::string_view bytes, OutputKind kind = OutputKind::lines);

bool isOutputRecord(std::string_view payload);
// nullopt when the payload is not a well-formed output record.
std::optional<OutputRecord> decodeOutputRecord(std::string_view payload);

}  // namespace tlaunch
