// libFuzzer harness: a frame payload through the control-message decoder (bounded CBOR).
// What decodes must survive a round trip, and the typed accessors must never throw.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bootstrap/bounded_cbor.h"
#include "bootstrap/message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  // Any CBOR value, not only maps: the bounds apply to every decode.
  if (auto value = tlaunch::parseBoundedCbor(payload, 8)) {
    if (!tlaunch::parseBoundedCbor(payload)) std::abort();  // a deeper cap accepts what a shallower one does
  }
  auto message = tlaunch::decodeMessage(payload);
  if (!message) return 0;
  for (const auto& [key, value] : message->items()) {
    (void)tlaunch::getString(*message, key.c_str());
    (void)tlaunch::getInt(*message, key.c_str());
    (void)tlaunch::getBool(*message, key.c_str());
    (void)tlaunch::bytesOf(value);
  }
  // Encoding what was decoded gives a message that decodes to the same encoding.
  const std::string encoded = tlaunch::encodeMessage(*message);
  auto again = tlaunch::decodeMessage(encoded);
  if (!again || tlaunch::encodeMessage(*again) != encoded) std::abort();
  return 0;
}
