#pragma once
// The few string helpers every part of tlaunch uses, in one place.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

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

// "n0, n1, n2 and 3997 more": at most `shown` items (strings, or numbers printed in decimal) of a
// list that may name thousands of nodes (a message naming every one of 4,000 nodes helps nobody).
template <class T>
std::string joinSome(const std::vector<T>& items, std::size_t shown = 10) {
  const std::vector<T> head(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), shown)));
  std::string out = joinStrings(head);
  if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
  return out;
}

// "0x1b": how verbs and sysfs values are shown to users.
inline std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

// "0a1b..": bytes as lower-case hex, two digits each (secrets, digests).
inline std::string hexBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// Ranks as ranges, "0-4, 6-7, 9" (`separator` between them): sorted, duplicates ignored.
inline std::string formatRankRanges(std::vector<int> ranks, std::string_view separator = ", ") {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += separator;
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

// Text from a user's file or flag, safe to quote in a message: printable ASCII and well-formed
// UTF-8 as they are, any other byte (NUL, control characters, a cut-off sequence) as \xNN, and
// at most `max_bytes` of it, then "...". A NUL would end the message on a terminal, an escape
// sequence rewrite it.
inline std::string visibleText(std::string_view s, std::size_t max_bytes = 200) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (out.size() >= max_bytes) return out + "...";
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 1;
    if (c >= 0x80 && len == 1) len = 0;  // a continuation byte, or one never used in UTF-8
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 1) ok = c >= 0x20 && c != 0x7f;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
      ++i;
    }
  }
  return out;
}

// `s` without the blanks (space, tab, CR, LF) at its end.
inline std::string_view trimRightBlanks(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// `s` without the blanks (space, tab, CR, LF) at either end.
inline std::string_view trimBlanks(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// ASCII letters lowered; every other byte as it is (host names compare case-insensitively).
inline std::string asciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace tlaunch
