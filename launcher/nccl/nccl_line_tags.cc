#include "launcher/nccl/nccl_line_tags.h"

#include <cstddef>
#include <optional>

#include "launcher/nccl/nccl_text.h"

namespace tlaunch::nccl {
namespace {

bool isNameChar(char c) { return isAlnum(c) || c == '.' || c == '_' || c == '-'; }

bool allNameChars(std::string_view s) {
  for (char c : s)
    if (!isNameChar(c)) return false;
  return !s.empty();
}

// The rank a bracketed tag names: "[56]", "[1,3]" (Open MPI: job,rank), "[node1:3]" (tlaunch,
// srun style); -1 for any other bracket ("[pod/job-0/main]", "[2025-05-22 14:26:33,407]").
int bracketRank(std::string_view inside) {
  if (allDigits(inside)) return toInt(inside);
  auto sep = inside.find_last_of(",:");
  if (sep == std::string_view::npos || !allDigits(inside.substr(sep + 1))) return -1;
  auto left = inside.substr(0, sep);
  bool named = inside[sep] == ',' ? allDigits(left) : allNameChars(left);
  return named ? toInt(inside.substr(sep + 1)) : -1;
}

// The length of an ISO 8601 timestamp at the start of s ("2025-05-22T14:26:33.407Z",
// "2025-05-22 14:26:33,407", "2025-05-22T14:26:33.123456789+02:00"), 0 if there is none.
std::size_t timestampLength(std::string_view s) {
  auto digitsAt = [&](std::size_t at, std::size_t n) { return at + n <= s.size() && allDigits(s.substr(at, n)); };
  auto charAt = [&](std::size_t at, std::string_view any) {
    return at < s.size() && any.find(s[at]) != std::string_view::npos;
  };
  if (!(digitsAt(0, 4) && charAt(4, "-") && digitsAt(5, 2) && charAt(7, "-") && digitsAt(8, 2) && charAt(10, "T ") &&
        digitsAt(11, 2) && charAt(13, ":") && digitsAt(14, 2) && charAt(16, ":") && digitsAt(17, 2)))
    return 0;
  std::size_t n = 19;
  if (charAt(n, ".,") && digitsAt(n + 1, 1)) {
    ++n;
    while (n < s.size() && isDigit(s[n])) ++n;
  }
  if (charAt(n, "Z")) return n + 1;
  if (charAt(n, "+-") && digitsAt(n + 1, 2)) {
    n += 3;
    if (charAt(n, ":")) ++n;
    if (digitsAt(n, 2)) n += 2;
  }
  return n;
}

// One tag at the start of `lead` (already left-trimmed): what follows it, or nullopt.
std::optional<std::string_view> stripOneTag(std::string_view lead, LineOrigin& origin) {
  if (lead.starts_with("[")) {
    auto close = lead.find(']');
    if (close > 80) return std::nullopt;  // npos too
    int rank = bracketRank(lead.substr(1, close - 1));
    if (rank >= 0) origin.tag_rank = rank;
    auto rest = lead.substr(close + 1);
    if (rest.starts_with("<stdout>:") || rest.starts_with("<stderr>:")) rest = rest.substr(9);
    return rest;
  }
  if (lead.starts_with("(")) {  // Ray: "(RayWorkerWrapper pid=626, ip=10.244.1.107) "
    auto close = lead.find(')');
    auto pid = lead.find("pid=");
    if (close > 120 || pid > close) return std::nullopt;  // npos too
    auto digitsEnd = pid + 4;
    while (digitsEnd < close && isDigit(lead[digitsEnd])) ++digitsEnd;
    origin.tag_pid = toLong(lead.substr(pid + 4, digitsEnd - pid - 4));
    return lead.substr(close + 1);
  }
  if (auto n = timestampLength(lead); n > 0 && n < lead.size() && lead[n] == ' ') return lead.substr(n);
  std::size_t word = 0;
  while (word < lead.size() && word < 64 && isNameChar(lead[word])) ++word;
  if (word == 0 || word == lead.size()) return std::nullopt;
  auto after = lead.substr(word);
  if (after.starts_with(": ") && allDigits(lead.substr(0, word)) && word <= 7) {  // srun -l
    origin.tag_rank = toInt(lead.substr(0, word));
    return after.substr(1);
  }
  auto spaced = trimLeft(after);
  if (spaced.size() < after.size() && spaced.starts_with("| ")) return spaced.substr(1);  // docker compose
  return std::nullopt;
}

}  // namespace

std::string_view stripLineTags(std::string_view lead, LineOrigin& origin) {
  for (int guard = 0; guard < 4; ++guard) {
    lead = trimLeft(lead);
    auto rest = stripOneTag(lead, origin);
    if (!rest) break;
    lead = *rest;
  }
  return trimLeft(lead);
}

}  // namespace tlaunch::nccl
