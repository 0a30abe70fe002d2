// libFuzzer harness: rank output records. A payload that decodes must encode back to itself.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bootstrap/frame_codec.h"
#include "bootstrap/output_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  auto record = tlaunch::decodeOutputRecord(payload);
  if (!record) return 0;
  if (!tlaunch::isOutputRecord(payload) || record->rank < 0 || (record->stream != 1 && record->stream != 2)) {
    std::abort();
  }
  const std::string frame = tlaunch::encodeOutputFrame(record->rank, record->stream, record->bytes, record->kind);
  if (frame.size() != tlaunch::kFrameHeaderBytes + size || frame.substr(tlaunch::kFrameHeaderBytes) != payload) {
    std::abort();
  }
  return 0;
}
