#include "launcher/hostlist.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace tlaunch {

namespace {

constexpr size_t kMaxNames = kMaxHostlistNames;  // what countNames needs to tell apart
constexpr size_t kMaxDigits = 9;  // fits uint64 with room for the arithmetic below

struct NumberRange {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 1;  // digits of the lower bound as written: zero padding
};

// A pattern is literal pieces and bracket groups in sequence; a literal is a group with
// no ranges and `text` set.
struct Piece {
  std::string text;
  std::vector<NumberRange> ranges;
  bool isLiteral() const { return ranges.empty(); }
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::string formatNumber(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

Error syntaxError(std::string_view expression, const std::string& what) {
  return Error{Errc::usage, "bad hostlist expression '" + std::string(expression) + "': " + what,
               "write names like node[01-04,07] or rack[1-2]-node[1-8], separated by commas"};
}

std::optional<uint64_t> parseNumber(std::string_view digits) {
  if (digits.empty() || digits.size() > kMaxDigits) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    if (!isDigit(c)) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

Result<std::vector<NumberRange>> parseBracket(std::string_view inside, std::string_view expression) {
  std::vector<NumberRange> ranges;
  size_t start = 0;
  while (start <= inside.size()) {
    size_t comma = inside.find(',', start);
    if (comma == std::string_view::npos) comma = inside.size();
    const std::string_view item = inside.substr(start, comma - start);
    const size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    auto lo = parseNumber(lo_text);
    auto hi = parseNumber(hi_text);
    if (item.empty()) return tl::unexpected(syntaxError(expression, "empty range in [" + std::string(inside) + "]"));
    if (!lo || !hi) {
      return tl::unexpected(syntaxError(
          expression, "'" + std::string(item) + "' is not a number or range N-M (at most 9 digits) in [" +
                          std::string(inside) + "]"));
    }
    if (*lo > *hi) {
      return tl::unexpected(syntaxError(expression, "range " + std::string(item) + " runs backwards"));
    }
    ranges.push_back({*lo, *hi, lo_text.size()});
    start = comma + 1;
  }
  return ranges;
}

Result<std::vector<Piece>> parsePattern(std::string_view pattern, std::string_view expression) {
  std::vector<Piece> pieces;
  std::string literal;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == ']') return tl::unexpected(syntaxError(expression, "']' without '['"));
    if (c != '[') {
      literal += c;
      continue;
    }
    const size_t close = pattern.find(']', i + 1);
    if (close == std::string_view::npos) return tl::unexpected(syntaxError(expression, "'[' without ']'"));
    const std::string_view inside = pattern.substr(i + 1, close - i - 1);
    if (inside.find('[') != std::string_view::npos) {
      return tl::unexpected(syntaxError(expression, "brackets cannot nest"));
    }
    auto ranges = parseBracket(inside, expression);
    if (!ranges) return tl::unexpected(ranges.error());
    if (!literal.empty()) pieces.push_back({std::move(literal), {}});
    literal.clear();
    pieces.push_back({{}, std::move(*ranges)});
    i = close;
  }
  if (!literal.empty()) pieces.push_back({std::move(literal), {}});
  return pieces;
}

size_t countNames(const std::vector<Piece>& pieces) {
  size_t total = 1;
  for (const auto& p : pieces) {
    if (p.isLiteral()) continue;
    size_t n = 0;
    for (const auto& r : p.ranges) {
      n += static_cast<size_t>(r.hi - r.lo + 1);
      if (n > kMaxNames) return kMaxNames + 1;
    }
    total *= n;
    if (total > kMaxNames) return kMaxNames + 1;
  }
  return total;
}

// Every name of one pattern, the leftmost group varying slowest: an odometer over the pieces'
// choices. Iterative on purpose: a pattern may hold any number of groups ("a[1][1][1]..." from
// a hostfile), and one stack frame per group overflowed the stack (found by fuzzing).
void expandPieces(const std::vector<Piece>& pieces, std::vector<std::string>& out) {
  std::vector<std::vector<std::string>> choices;
  for (const auto& p : pieces) {
    std::vector<std::string>& c = choices.emplace_back();
    if (p.isLiteral()) c.push_back(p.text);
    for (const auto& r : p.ranges) {
      for (uint64_t v = r.lo; v <= r.hi; ++v) c.push_back(formatNumber(v, r.width));
    }
  }
  if (choices.empty()) return;
  std::vector<size_t> at(choices.size(), 0);
  for (;;) {
    std::string name;
    for (size_t i = 0; i < choices.size(); ++i) name += choices[i][at[i]];
    out.push_back(std::move(name));
    size_t i = choices.size();
    while (i > 0 && ++at[i - 1] == choices[i - 1].size()) at[--i] = 0;
    if (i == 0) return;
  }
}

bool isSeparator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

// A name split around its last run of digits: "rack1-node07.ib" → "rack1-node", 7 ("07"), ".ib".
struct NumberedName {
  std::string_view prefix;
  std::string_view digits;
  std::string_view suffix;
  uint64_t value = 0;
};

std::optional<NumberedName> splitLastNumber(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && !isDigit(name[end - 1])) --end;
  if (end == 0) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && isDigit(name[begin - 1])) --begin;
  auto value = parseNumber(name.substr(begin, end - begin));
  if (!value) return std::nullopt;
  return NumberedName{name.substr(0, begin), name.substr(begin, end - begin), name.substr(end), *value};
}

// Names in one bracket group share prefix, suffix and a padding width with which every
// member's digits format back exactly.
struct Group {
  std::string_view prefix;
  std::string_view suffix;
  size_t width = 1;
  std::vector<uint64_t> values;
  std::string_view only_name;  // the name when the group has one member
};

std::string renderGroup(const Group& g) {
  if (g.values.size() == 1) return std::string(g.only_name);
  std::string out(g.prefix);
  out += '[';
  for (size_t i = 0; i < g.values.size();) {
    size_t j = i;
    while (j + 1 < g.values.size() && g.values[j + 1] == g.values[j] + 1) ++j;
    if (i > 0) out += ',';
    out += formatNumber(g.values[i], g.width);
    if (j > i) out += '-' + formatNumber(g.values[j], g.width);
    i = j + 1;
  }
  out += ']';
  out += g.suffix;
  return out;
}

}  // namespace

std::vector<std::string_view> splitOutsideBrackets(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']' && depth > 0) --depth;
    if (text[i] == separator && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

Result<std::vector<std::string>> expandHostlist(std::string_view expression, size_t max_names) {
  std::vector<std::string> names;
  size_t i = 0;
  while (i < expression.size()) {
    if (isSeparator(expression[i])) {
      ++i;
      continue;
    }
    // One pattern runs to the next separator outside brackets.
    size_t end = i;
    int depth = 0;
    while (end < expression.size() && (depth > 0 || !isSeparator(expression[end]))) {
      if (expression[end] == '[') ++depth;
      if (expression[end] == ']') --depth;
      ++end;
    }
    auto pieces = parsePattern(expression.substr(i, end - i), expression);
    if (!pieces) return tl::unexpected(pieces.error());
    const size_t limit = std::min(max_names, kMaxNames);
    if (names.size() + countNames(*pieces) > limit) {
      return tl::unexpected(syntaxError(
          expression, limit == kMaxNames ? "expands to more than " + std::to_string(kMaxNames) + " names"
                                         : "expands to more names than the " + std::to_string(limit) +
                                               " still allowed (at most " + std::to_string(kMaxNames) + " in all)"));
    }
    expandPieces(*pieces, names);
    i = end;
  }
  if (names.empty()) return tl::unexpected(syntaxError(expression, "no host names in it"));
  return names;
}

std::string compressHostlist(const std::vector<std::string>& names) {
  std::string out;
  std::optional<Group> group;
  auto flush = [&] {
    if (!group) return;
    if (!out.empty()) out += ',';
    out += renderGroup(*group);
    group.reset();
  };
  for (const auto& name : names) {
    auto parts = splitLastNumber(name);
    if (!parts) {
      flush();
      if (!out.empty()) out += ',';
      out += name;
      continue;
    }
    if (group && group->prefix == parts->prefix && group->suffix == parts->suffix &&
        formatNumber(parts->value, group->width) == parts->digits) {
      group->values.push_back(parts->value);
      continue;
    }
    flush();
    const bool padded = parts->digits.size() > 1 && parts->digits[0] == '0';
    group = Group{parts->prefix, parts->suffix, padded ? parts->digits.size() : 1, {parts->value}, name};
  }
  flush();
  return out;
}

}  // namespace tlaunch
