#pragma once
// Turns a rank's raw output into whole lines. A line ends at "\n", "\r\n" or a lone "\r"
// (progress bars redraw with "\r": each redraw becomes a line instead of one line that only
// ends when the program does). Every emitted line ends with exactly one '\n'. Bytes are
// never altered: binary output passes through. A line longer than the cap is emitted in
// pieces, each marked as cut, so a program that never writes a newline cannot grow memory.
#include <cstddef>
#include <string>
#include <string_view>

namespace tlaunch {

inline constexpr size_t kMaxLineBytes = 1u << 20;
inline constexpr std::string_view kCutMarker = " [tlaunch: line cut at 1 MiB]";

class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = kMaxLineBytes) : max_line_(max_line) {}
  // Appends every complete line found in `data` to `out`.
  void feed(std::string_view data, std::string& out);
  // At end of stream: the unterminated rest, if any, as a line.
  void finish(std::string& out);
  size_t pending() const { return partial_.size(); }

 private:
  size_t max_line_;
  std::string partial_;
  bool after_cr_ = false;  // the previous chunk ended in '\r': a leading '\n' belongs to it
};

}  // namespace tlaunch
