#include "launcher/nccl/nccl_log.h"

#include <cstddef>
#include <optional>

#include "launcher/nccl/nccl_line_tags.h"
#include "launcher/nccl/nccl_text.h"

namespace tlaunch::nccl {
namespace {

constexpr std::size_t kMaxTextChars = 4096;  // a message longer than this is cut (hostile input)

struct Prefix {
  std::size_t start = 0;  // where "host:pid:tid" begins
  std::string host;
  long pid = -1;
  long tid = -1;
  int dev = -1;
};

bool isHostChar(char c) {
  return isAlnum(c) || c == '.' || c == '_' || c == '-';
}

// The digits that end just before `end`: [begin, end) or nullopt.
std::optional<std::size_t> digitsBefore(std::string_view s, std::size_t end) {
  std::size_t b = end;
  while (b > 0 && isDigit(s[b - 1]) && end - b < 18) --b;
  if (b == end) return std::nullopt;
  return b;
}

// Reads "host:pid:tid [dev] [file.cc:123 ]" backwards from `marker` (where "NCCL INFO" starts).
std::optional<Prefix> prefixBefore(std::string_view s, std::size_t marker) {
  std::size_t q = marker;
  if (q == 0 || s[q - 1] != ' ') return std::nullopt;
  --q;
  if (q > 0 && s[q - 1] != ']') {  // "misc/ibvwrap.cc:63 " between the prefix and NCCL WARN
    std::size_t t = q;
    while (t > 0 && s[t - 1] != ' ' && q - t < 200) --t;
    auto location = s.substr(t, q - t);
    auto colon = location.rfind(':');
    if (t == 0 || s[t - 1] != ' ' || colon == std::string_view::npos || colon + 1 == location.size() ||
        !allDigits(location.substr(colon + 1)))
      return std::nullopt;
    q = t - 1;
  }
  if (q == 0 || s[q - 1] != ']') return std::nullopt;
  auto devBegin = digitsBefore(s, q - 1);
  if (!devBegin || *devBegin == 0 || s[*devBegin - 1] != '[') return std::nullopt;
  Prefix p;
  p.dev = toInt(s.substr(*devBegin, q - 1 - *devBegin));
  q = *devBegin - 1;
  if (q == 0 || s[q - 1] != ' ') return std::nullopt;
  --q;
  auto tidBegin = digitsBefore(s, q);
  if (!tidBegin || *tidBegin == 0 || s[*tidBegin - 1] != ':') return std::nullopt;
  auto pidBegin = digitsBefore(s, *tidBegin - 1);
  if (!pidBegin || *pidBegin == 0 || s[*pidBegin - 1] != ':') return std::nullopt;
  std::size_t hostEnd = *pidBegin - 1;
  std::size_t h = hostEnd;
  while (h > 0 && isHostChar(s[h - 1]) && hostEnd - h < 255) --h;
  if (h == hostEnd) return std::nullopt;
  p.tid = toLong(s.substr(*tidBegin, q - *tidBegin));
  p.pid = toLong(s.substr(*pidBegin, *tidBegin - 1 - *pidBegin));
  p.start = h;
  p.host = std::string(s.substr(h, hostEnd - h));
  return p;
}

// A host glued to another message's tail ("…nranks ljm:803563:…" cut into "80356ljm"): keep the
// longest known host it ends with. Never applied to a host that begins its line (after other
// tools' tags): that is a real name, even when a known one ends it ("gpu-node1" beside "node1").
void trimGluedHost(Prefix& p, const std::set<std::string, std::less<>>& knownHosts) {
  if (knownHosts.empty() || knownHosts.contains(p.host)) return;
  for (std::size_t k = 1; k < p.host.size(); ++k)
    if (knownHosts.contains(std::string_view(p.host).substr(k))) {
      p.start += k;
      p.host.erase(0, k);
      return;
    }
}

bool onlyTagsBefore(std::string_view lead) {
  LineOrigin ignored;
  return stripLineTags(lead, ignored).empty();
}

// The positions of "NCCL INFO", "NCCL WARN" and "NCCL TRACE" that follow a NCCL prefix.
std::vector<std::pair<std::size_t, Prefix>> findMessages(std::string_view s,
                                                         const std::set<std::string, std::less<>>& knownHosts) {
  std::vector<std::pair<std::size_t, Prefix>> out;
  std::size_t from = 0;
  while (true) {
    auto m = s.find("NCCL ", from);
    if (m == std::string_view::npos) break;
    from = m + 5;
    auto rest = s.substr(m + 5);
    if (!rest.starts_with("INFO") && !rest.starts_with("WARN") && !rest.starts_with("TRACE")) continue;
    auto p = prefixBefore(s, m);
    if (!p) continue;
    if (!out.empty() || !onlyTagsBefore(s.substr(0, p->start))) trimGluedHost(*p, knownHosts);
    if (!out.empty() && p->start < out.back().first + 9) continue;  // overlaps the previous marker
    out.emplace_back(m, *p);
  }
  return out;
}

// Ray's deduplication adds " [repeated 14x across cluster]".
std::string_view stripRepeated(std::string_view text) {
  text = trimRight(text);
  if (text.ends_with("across cluster]")) {
    auto open = text.rfind(" [repeated ");
    if (open != std::string_view::npos) text = trimRight(text.substr(0, open));
  }
  return text;
}

}  // namespace

std::string cleanText(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\x1b') {  // CSI: ESC [ parameters… final byte 0x40–0x7e; other escapes: drop ESC + 1
      if (i + 1 < raw.size() && raw[i + 1] == '[') {
        i += 2;
        while (i < raw.size() && !(raw[i] >= 0x40 && raw[i] <= 0x7e)) ++i;
      } else {
        ++i;
      }
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') continue;
    out.push_back(c == '\t' ? ' ' : c);
  }
  return out;
}

std::vector<LogLine> parseLine(std::string_view raw, const std::set<std::string, std::less<>>& knownHosts) {
  std::string clean = cleanText(raw);
  std::string_view s = clean;
  std::vector<LogLine> out;
  auto messages = findMessages(s, knownHosts);
  LineOrigin leadOrigin;
  std::string_view lead = stripLineTags(s.substr(0, messages.empty() ? s.size() : messages.front().second.start),
                                    leadOrigin);
  if (lead.starts_with("NCCL version ")) {  // rank 0 prints it bare before 2.20
    LogLine line;
    line.origin = leadOrigin;
    line.event = classifyMessage(lead, false);
    out.push_back(std::move(line));
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto& [marker, prefix] = messages[i];
    std::size_t end = i + 1 < messages.size() ? messages[i + 1].second.start : s.size();
    bool warn = s.substr(marker + 5).starts_with("WARN");
    std::size_t textBegin = marker + (s.substr(marker + 5).starts_with("TRACE") ? 10 : 9);
    std::string_view text = textBegin < end ? s.substr(textBegin, end - textBegin) : std::string_view{};
    text = stripRepeated(trimLeft(text));
    if (text.size() > kMaxTextChars) text = text.substr(0, kMaxTextChars);
    LogLine line;
    line.origin = i == 0 ? leadOrigin : LineOrigin{};
    line.origin.host = prefix.host;
    line.origin.pid = prefix.pid;
    line.origin.tid = prefix.tid;
    line.origin.cuda_dev = prefix.dev;
    line.at_line_start = i == 0 && lead.empty();
    line.event = classifyMessage(text, warn);
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace tlaunch::nccl
