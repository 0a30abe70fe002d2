#pragma once
// Turns a rank's raw output into segments for the output records (bootstrap/output_record.h):
// - whole lines, ended by "\n" or "\r\n" (adjacent lines are merged into one segment);
// - progress-bar updates: a segment ended by a lone "\r" redraws the current line, it is no line;
// - pieces of a line longer than the cap (1 MiB), each but the last marked as continued, so a
//   program that never writes a newline cannot grow memory and no byte is ever dropped. A piece
//   ends between UTF-8 characters (up to 3 bytes short of the cap) unless the bytes are not UTF-8.
// Bytes are never altered, terminators included: the segments joined are exactly the input.
// The unterminated rest at the end of the stream comes out as a `lines` segment without "\n".
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/output_record.h"

namespace tlaunch {

inline constexpr size_t kMaxLineBytes = 1u << 20;

struct OutputSegment {
  OutputKind kind = OutputKind::lines;
  std::string bytes;
  bool operator==(const OutputSegment&) const = default;
};

class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = kMaxLineBytes) : max_line_(max_line) {}
  // Appends every segment completed by `data` to `out`.
  void feed(std::string_view data, std::vector<OutputSegment>& out);
  // At end of stream: whatever is left.
  void finish(std::vector<OutputSegment>& out);
  size_t pending() const { return partial_.size(); }
  // The current line so far (a held "\r" included), not taken: feed() and finish() still emit
  // it in its final kind. Shown while the rank waits (OutputKind::unfinished).
  std::string_view unfinished() const { return partial_; }

 private:
  void emit(OutputKind kind, std::vector<OutputSegment>& out);
  // Where an over-long line (partial_ then `piece`, together over the cap) is cut.
  size_t cutPoint(std::string_view piece) const;
  static void appendLines(std::string_view lines, std::vector<OutputSegment>& out);
  size_t max_line_;
  std::string partial_;      // the current line so far (a held '\r' included)
  bool cr_pending_ = false;  // partial_ ends in '\r': a '\n' next makes it "\r\n", else an update
};

}  // namespace tlaunch
