#include "daemon/line_splitter.h"

#include <cstring>

namespace tlaunch {
namespace {

// Position of `c` in data[from, to), or `to`. memchr: a rank's output is scanned once per byte
// class, not once per byte (string_view::find_first_of calls memchr for every byte).
size_t findByte(std::string_view data, char c, size_t from, size_t to) {
  if (from >= to) return to;
  const void* hit = std::memchr(data.data() + from, c, to - from);
  return hit == nullptr ? to : static_cast<size_t>(static_cast<const char*>(hit) - data.data());
}

bool isContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

}  // namespace

size_t LineSplitter::cutPoint(std::string_view piece) const {
  // Byte `pos` of the line so far (partial_ then piece); pos <= max_line_ < their total.
  const auto at = [&](size_t pos) { return pos < partial_.size() ? partial_[pos] : piece[pos - partial_.size()]; };
  size_t cut = max_line_;
  for (int back = 0; back < 3 && cut > 0 && isContinuationByte(at(cut)); ++back) --cut;
  return cut > 0 && !isContinuationByte(at(cut)) ? cut : max_line_;
}

void LineSplitter::emit(OutputKind kind, std::vector<OutputSegment>& out) {
  // Whole lines of one read go out as one segment; so do a bar's updates (each ends in its "\r":
  // the frontend shows the last, --output-dir files get them all). A bar redrawn in a loop, or
  // a storm of bare "\r", was one record per "\r".
  if ((kind == OutputKind::lines || kind == OutputKind::update) && !out.empty() && out.back().kind == kind) {
    out.back().bytes += partial_;
  } else {
    out.push_back({kind, std::move(partial_)});
  }
  partial_.clear();
}

void LineSplitter::appendLines(std::string_view lines, std::vector<OutputSegment>& out) {
  if (out.empty() || out.back().kind != OutputKind::lines) out.push_back({OutputKind::lines, {}});
  out.back().bytes.append(lines);
}

void LineSplitter::feed(std::string_view data, std::vector<OutputSegment>& out) {
  size_t i = 0;
  if (cr_pending_ && !data.empty()) {
    cr_pending_ = false;
    if (data[0] == '\n') {
      partial_.push_back('\n');
      emit(OutputKind::lines, out);
      i = 1;
    } else {
      emit(OutputKind::update, out);
    }
  }
  size_t next_cr = findByte(data, '\r', i, data.size());
  while (i < data.size()) {
    if (partial_.empty()) {
      // Fast path: the complete lines before the next '\r' go out in one copy. A span no longer
      // than the cap holds no line over it: its last '\n' ends the run (one scan from the end,
      // not one call per line); a longer span is walked line by line.
      size_t run_end = i;
      if (next_cr - i <= max_line_) {
        const void* last = ::memrchr(data.data() + i, '\n', next_cr - i);
        if (last != nullptr) run_end = static_cast<size_t>(static_cast<const char*>(last) - data.data()) + 1;
      } else {
        for (;;) {
          const size_t nl = findByte(data, '\n', run_end, next_cr);
          if (nl == next_cr || nl + 1 - run_end > max_line_) break;
          run_end = nl + 1;
        }
      }
      if (run_end > i) {
        appendLines(data.substr(i, run_end - i), out);
        i = run_end;
        continue;
      }
    }
    const size_t end = findByte(data, '\n', i, next_cr);
    std::string_view piece = data.substr(i, end - i);
    // The cap: full-size pieces of an over-long line go out marked as continued.
    // Each piece prints as a line of its own, so the cut moves back (at most 3 bytes) to the start
    // of a UTF-8 character; bytes that are not UTF-8 are cut at the cap. The cut depends only on
    // the line's bytes, never on where a read ended.
    while (partial_.size() + piece.size() > max_line_) {
      const size_t cut = cutPoint(piece);
      std::string carried;  // a character's first bytes, already held, that go to the next piece
      if (cut < partial_.size()) {
        carried = partial_.substr(cut);
        partial_.resize(cut);
      } else {
        const size_t take = cut - partial_.size();
        partial_.append(piece.substr(0, take));
        piece.remove_prefix(take);
      }
      emit(OutputKind::continued, out);
      partial_ = std::move(carried);
    }
    partial_.append(piece);
    if (end == data.size()) return;
    partial_.push_back(data[end]);
    i = end + 1;
    if (data[end] == '\n') {
      emit(OutputKind::lines, out);
      continue;
    }
    next_cr = findByte(data, '\r', i, data.size());
    if (i == data.size()) {
      cr_pending_ = true;  // "\r" at the end of a read: the next read says whether "\n" follows
    } else if (data[i] == '\n') {
      partial_.push_back('\n');
      emit(OutputKind::lines, out);
      ++i;
    } else {
      emit(OutputKind::update, out);
    }
  }
}

void LineSplitter::finish(std::vector<OutputSegment>& out) {
  if (!partial_.empty()) emit(cr_pending_ ? OutputKind::update : OutputKind::lines, out);
  cr_pending_ = false;
}

}  // namespace tlaunch
