#pragma once
// CBOR from a peer, parsed with bounds: nlohmann's parser recurses once per nesting level, so a
// frame of nested arrays (0x81 0x81 ...) would overflow the stack, and a forged element count
// would reach the DOM builder's size check, which throws. Every control-plane decode goes
// through here.
#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tlaunch/result.h"

namespace tlaunch {

// Deeper than any message tlaunch sends (a few levels), far below what the stack can take.
inline constexpr size_t kMaxCborDepth = 32;

// The value, or a protocol error for malformed CBOR (trailing bytes included), nesting deeper
// than `max_depth` arrays/maps, or an array/map whose declared element count exceeds what the
// payload could hold. Never throws.
Result<nlohmann::json> parseBoundedCbor(std::string_view bytes, size_t max_depth = kMaxCborDepth);

}  // namespace tlaunch
