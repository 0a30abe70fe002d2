#pragma once
// The few string helpers every part of tlaunch uses, in one place.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

namespace tlaunch {

// "a, b, c": the items of any range of strings (or of numbers, printed in decimal).
template <class Range>
std::string joinStrings(const Range& items, std::string_view sep = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += sep;
    first = false;
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(item)>>) out += std::to_string(item);
    else out += item;
  }
  return out;
}

// "0x1b": how verbs and sysfs values are shown to users.
inline std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

}  // namespace tlaunch
