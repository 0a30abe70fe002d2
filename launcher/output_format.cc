#include "launcher/output_format.h"

#include <locale.h>
#include <wchar.h>

#include <algorithm>
#include <cstring>

namespace tlaunch {

namespace {
constexpr std::string_view kClearLine = "\r\x1b[K";

// Each line of `bytes` with the tag before it and "\n" after it ("\r\n" printed as "\n").
// The hot path of the output relay: one allocation in the usual case, memchr and appends only
// (reserve, not resize: resizing zero-filled the whole buffer before it was written).
std::string tagLines(const std::string& tag, std::string_view bytes) {
  std::string s;
  s.reserve(bytes.size() + tag.size() * (bytes.size() / 16 + 1) + 1);  // grows if lines are shorter
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p < end) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* line_end = nl == nullptr ? end : nl;
    size_t len = static_cast<size_t>(line_end - p);
    if (len > 0 && p[len - 1] == '\r') --len;
    s.append(tag);
    s.append(p, len);
    s.push_back('\n');
    p = line_end + 1;
  }
  return s;
}
}  // namespace

namespace {
// Where the terminal escape sequence starting at text[i] (ESC) ends: CSI "ESC [ ... final"
// (colours, cursor), OSC "ESC ] ... BEL or ESC \\" (titles, links), else ESC and one byte.
size_t escapeEnd(std::string_view text, size_t i) {
  if (i + 1 >= text.size()) return text.size();
  if (text[i + 1] == '[') {
    for (size_t j = i + 2; j < text.size(); ++j) {
      const auto c = static_cast<unsigned char>(text[j]);
      if (c >= 0x40 && c <= 0x7e) return j + 1;
      // Neither a parameter nor an intermediate byte: a broken sequence ends here, and what
      // follows takes its columns (it must not hide a whole line from the width cut).
      if (c < 0x20 || c > 0x3f) return j;
    }
    return text.size();
  }
  if (text[i + 1] == ']') {
    for (size_t j = i + 2; j < text.size(); ++j) {
      if (text[j] == '\a') return j + 1;
      if (text[j] == '\x1b' && j + 1 < text.size() && text[j + 1] == '\\') return j + 2;
    }
    return text.size();
  }
  return i + 2;
}
// A bar's state or an unfinished line as shown: without the "\r" (or line end) that ends it.
// What a bar's update (or an unfinished line) shows: its last state that is not empty. An update
// record may hold several states, each ended by "\r" (daemon/line_splitter.cc).
std::string_view shownPart(std::string_view bytes) {
  while (!bytes.empty() && (bytes.back() == '\r' || bytes.back() == '\n')) bytes.remove_suffix(1);
  if (const size_t cr = bytes.rfind('\r'); cr != std::string_view::npos) bytes.remove_prefix(cr + 1);
  return bytes;
}

// A state of blanks only: a bar erasing itself (tqdm's leave=False ends with "\r", spaces, "\r").
bool isBlank(std::string_view state) { return state.find_first_not_of(" \t") == std::string_view::npos; }

// The last state of an update record that shows something; empty if none does.
std::string_view lastVisibleState(std::string_view bytes) {
  while (!bytes.empty()) {
    const std::string_view state = shownPart(bytes);
    if (!isBlank(state)) return state;
    bytes = bytes.substr(0, static_cast<size_t>(state.data() - bytes.data()));  // the states before it
  }
  return {};
}
}  // namespace

int columnsOf(std::string_view text, size_t at, size_t* length) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const size_t n = lead < 0x80 ? 1 : (lead & 0xe0) == 0xc0 ? 2 : (lead & 0xf0) == 0xe0 ? 3 : (lead & 0xf8) == 0xf0 ? 4 : 1;
  *length = 1;
  if (n == 1 || at + n > text.size()) return 1;  // ASCII, or not UTF-8: one column, as terminals show it
  char32_t code = lead & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(text[at + k]);
    if ((c & 0xc0) != 0x80) return 1;
    code = (code << 6) | (c & 0x3f);
  }
  *length = n;
  // glibc's Unicode width table (East Asian wide: 2, combining marks: 0), read under C.UTF-8
  // whatever the process's locale; without that locale, one column.
  static const locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t{});
  if (utf8 == locale_t{}) return 1;
  const locale_t before = ::uselocale(utf8);
  const int width = ::wcwidth(static_cast<wchar_t>(code));
  ::uselocale(before);
  return width < 0 ? 1 : width;
}

std::string cutToColumns(std::string_view text, int columns) {
  int seen = 0;
  bool escapes = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {  // takes no column; the bar's colour must not make the cut early
      escapes = true;
      i = escapeEnd(text, i) - 1;
      continue;
    }
    size_t length = 1;
    // A tab moves to the next multiple of 8 (a terminal's default stops): counted as one column,
    // a bar with tabs wrapped, and the wrapped rows were never redrawn.
    const int width = c == '\t' ? 8 - seen % 8 : c < 0x80 ? 1 : columnsOf(text, i, &length);
    const size_t start = i;
    i += length - 1;  // the character's other bytes
    if ((seen += width) > columns) {
      // The cut may drop the sequence that resets the colour: reset it here, or the terminal
      // stays coloured after tlaunch exits.
      return std::string(text.substr(0, start)) + (escapes ? "\x1b[0m" : "");
    }
  }
  return std::string(text);
}

void OutputFormatter::print(int stream, std::string text, std::vector<Write>& out) {
  // Only a terminal line shares the screen with the in-place line.
  if (live_ && isTty(stream)) {
    out.push_back({live_->stream, std::string(kClearLine)});
    out.push_back({stream, std::move(text)});
    out.push_back({live_->stream, live_->text});
    return;
  }
  out.push_back({stream, std::move(text)});
}

void OutputFormatter::record(const std::string& tag, int rank, int stream, OutputKind kind, std::string_view bytes,
                             Clock::time_point now, std::vector<Write>& out) {
  if (!withoutEchoed(rank, stream, kind, bytes)) return;
  if (kind == OutputKind::update) return update(tag, rank, stream, bytes, now, out);
  if (kind == OutputKind::unfinished) return unfinished(tag, rank, stream, bytes, now, out);
  // The end of a progress bar, or more of its line: its held-back state is superseded. A line
  // that ends the bar with no text of its own ("state\r\r\n", "state\r\n" split as an update
  // and an empty line) leaves the state on a terminal's screen: it is the line's text.
  // Into a pipe that state may already be a line of its own: then the empty line adds nothing.
  std::string ended_bar;
  if (auto h = held_.find({rank, stream}); h != held_.end()) {
    // The rank's output ended on a line it never finished (a bar's last state, a prompt), which a
    // pipe has as a line already: nothing came after it, so it is not printed again.
    if (kind == OutputKind::lines && !isTty(stream) && !bytes.ends_with('\n') && !h->second.printed.empty() &&
        h->second.printed == tag + std::string(bytes) + "\n") {
      h->second.pending = false;
      h->second.state.clear();
      h->second.printed.clear();
      return;
    }
    if (kind == OutputKind::lines && !h->second.state.empty() && (bytes.starts_with("\n") || bytes.starts_with("\r\n"))) {
      if (isTty(stream) || h->second.pending) ended_bar = h->second.state;
      else bytes.remove_prefix(bytes.find('\n') + 1);
    }
    h->second.pending = false;
    h->second.state.clear();
    h->second.printed.clear();
    if (bytes.empty()) return;
  }
  std::string text = kind == OutputKind::continued ? tag + std::string(bytes) + "\n"
                     : ended_bar.empty()           ? tagLines(tag, bytes)
                                                   : tagLines(tag, ended_bar + std::string(bytes));
  if (live_ && live_->rank == rank && live_->stream == stream) {
    out.push_back({stream, std::string(kClearLine)});  // this rank's line replaces its own bar
    live_.reset();
  }
  print(stream, std::move(text), out);
}

void OutputFormatter::update(const std::string& tag, int rank, int stream, std::string_view bytes,
                             Clock::time_point now, std::vector<Write>& out) {
  const std::string_view content = shownPart(bytes);
  if (content.empty()) return;  // the "\r" before a bar's first state
  if (isBlank(content)) return erased(tag, rank, stream, lastVisibleState(bytes), now, out);
  held_[{rank, stream}].state = content;
  if (isTty(stream)) {
    std::string text = cutToColumns(tag + std::string(content), std::max(1, terminals_.width - 1));
    if (live_ && live_->stream != stream) out.push_back({live_->stream, std::string(kClearLine)});
    out.push_back({stream, std::string(kClearLine) + text});
    live_ = Live{stream, rank, std::move(text)};
    return;
  }
  Held& h = held_[{rank, stream}];
  h.text = tag + std::string(content) + "\n";
  h.pending = h.text != h.printed;  // printed already (shown while unfinished): nothing new
  if (h.pending && now >= h.next_allowed) {
    h.pending = false;
    h.next_allowed = now + kUpdateInterval;
    h.printed = h.text;
    print(stream, h.text, out);
  }
}

// A bar that erased itself leaves an empty line on a terminal, where the next output goes. Into a
// pipe it adds no line of blanks; its last state is printed if it was held back (the bar's end,
// "100%", would be lost otherwise).
void OutputFormatter::erased(const std::string& tag, int rank, int stream, std::string_view last_state,
                             Clock::time_point now, std::vector<Write>& out) {
  Held& h = held_[{rank, stream}];
  h.state.clear();
  if (isTty(stream)) {
    if (live_ && live_->rank == rank && live_->stream == stream) {
      out.push_back({stream, std::string(kClearLine)});
      live_.reset();
    }
    return;
  }
  if (!last_state.empty()) {
    h.text = tag + std::string(last_state) + "\n";
    h.pending = h.text != h.printed;
  }
  if (!h.pending) return;
  h.pending = false;
  h.next_allowed = now + kUpdateInterval;
  h.printed = h.text;
  print(stream, h.text, out);
}

void OutputFormatter::unfinished(const std::string& tag, int rank, int stream, std::string_view bytes,
                                 Clock::time_point now, std::vector<Write>& out) {
  if (isTty(stream)) return update(tag, rank, stream, bytes, now, out);  // in place, as a bar's state
  // Into a pipe, only a line still unfinished a second later is printed (and once more when it
  // is done): a prompt waiting for input shows, a line written in pieces is not printed twice.
  const std::string_view content = shownPart(bytes);
  if (content.empty()) return;
  Held& h = held_[{rank, stream}];
  if (!h.pending) h.next_allowed = std::max(h.next_allowed, now + kUpdateInterval);
  h.text = tag + std::string(content) + "\n";
  h.pending = h.text != h.printed;
}

void OutputFormatter::inputEchoed(int rank) {
  if (!live_ || live_->rank != rank || !isTty(live_->stream)) return;  // its prompt is not what the screen shows
  Held& h = held_[{rank, live_->stream}];
  h.echoed += h.state;
  h.state.clear();
  live_.reset();  // a finished line now: not cleared or redrawn
}

bool OutputFormatter::withoutEchoed(int rank, int stream, OutputKind kind, std::string_view& bytes) {
  const auto h = held_.find({rank, stream});
  if (h == held_.end() || h->second.echoed.empty()) return true;
  std::string& echoed = h->second.echoed;
  // The rank's line goes on from its prompt (its line pieces repeat the whole line so far); any
  // other record means the line is no longer the one on the screen.
  if ((kind != OutputKind::lines && kind != OutputKind::unfinished) || !bytes.starts_with(echoed)) {
    echoed.clear();
    return true;
  }
  bytes.remove_prefix(echoed.size());
  if (kind == OutputKind::lines) {
    echoed.clear();  // its line ended: later lines are whole
    return true;
  }
  return !bytes.empty();
}

void OutputFormatter::note(std::string_view text, std::vector<Write>& out) {
  std::string s;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    s += "tlaunch: ";
    s.append(text.substr(start, nl - start));
    s.push_back('\n');
    start = nl + 1;
  }
  print(2, std::move(s), out);
}

void OutputFormatter::due(Clock::time_point now, std::vector<Write>& out) {
  for (auto& [key, h] : held_) {
    if (!h.pending || now < h.next_allowed) continue;
    h.pending = false;
    h.next_allowed = now + kUpdateInterval;
    h.printed = h.text;
    print(key.second, h.text, out);
  }
}

std::optional<OutputFormatter::Clock::time_point> OutputFormatter::nextDue() const {
  std::optional<Clock::time_point> next;
  for (const auto& [key, h] : held_)
    if (h.pending && (!next || h.next_allowed < *next)) next = h.next_allowed;
  return next;
}

void OutputFormatter::finish(std::vector<Write>& out) {
  for (auto& [key, h] : held_)
    if (h.pending) print(key.second, h.text, out);
  // The next attempt (--max-restarts) starts with no bar: a state of this one must not end
  // its first line.
  held_.clear();
  if (live_) {
    out.push_back({live_->stream, "\n"});
    live_.reset();
  }
}

}  // namespace tlaunch
