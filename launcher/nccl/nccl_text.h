#pragma once
// Small string helpers for the NCCL log parser (locale-free, no allocation unless stated).
#include <charconv>
#include <string>
#include <string_view>

namespace tlaunch::nccl {

inline bool isDigit(char c) { return c >= '0' && c <= '9'; }
inline bool isAlnum(char c) { return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline bool allDigits(std::string_view s) {
  for (char c : s)
    if (!isDigit(c)) return false;
  return !s.empty();
}

// The number at the start of s (-1 when there is none, or it does not fit).
inline long toLong(std::string_view s) {
  long v = -1;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr != s.data() ? v : -1;
}
inline int toInt(std::string_view s) {
  long v = toLong(s);
  return v >= 0 && v <= 1'000'000'000 ? static_cast<int>(v) : -1;
}

inline std::string_view trimLeft(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}
inline std::string_view trimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '.')) s.remove_suffix(1);
  return s;
}
inline std::string_view trim(std::string_view s) { return trimRight(trimLeft(s)); }

// The text after `key` up to the next space (empty when key is absent).
inline std::string_view wordAfter(std::string_view s, std::string_view key) {
  auto at = s.find(key);
  if (at == std::string_view::npos) return {};
  auto rest = s.substr(at + key.size());
  return rest.substr(0, rest.find(' '));
}

}  // namespace tlaunch::nccl
