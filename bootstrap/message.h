#pragma once
// Control messages are CBOR maps with a string field "t" naming the type. Binary payloads
// (output bytes, PMIx blobs) travel as CBOR byte strings.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tlaunch/result.h"

namespace tlaunch {

using Json = nlohmann::json;

std::string encodeMessage(const Json& msg);
// Never throws: malformed CBOR, a non-map, or a missing/non-string "t" is an error.
Result<Json> decodeMessage(std::string_view payload);

// Through byte pointers, so that the copy is one memcpy: from char iterators the vector is
// filled element by element (PMIx fence blobs of megabytes go through here).
inline Json binary(std::string_view bytes) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  return Json::binary(std::vector<std::uint8_t>(p, p + bytes.size()));
}
// The bytes of a CBOR byte string (or a text string), "" otherwise.
std::string bytesOf(const Json& v);
// The bytes of field `key` of `m` (as bytesOf), "" when `m` is not an object or has no such field.
std::string bytesAt(const Json& m, const char* key);

// JSON text for people and files (--summary-json, --json, the warm registry). A string that is
// not UTF-8 (a rank's stderr, a host name, an argument) has its bad bytes replaced by U+FFFD:
// nlohmann's dump() would throw.
inline std::string jsonText(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// Typed accessors that never throw on a peer's bad input.
std::string getString(const Json& m, const char* key, std::string fallback = {});
long long getInt(const Json& m, const char* key, long long fallback = 0);
bool getBool(const Json& m, const char* key, bool fallback = false);

}  // namespace tlaunch
