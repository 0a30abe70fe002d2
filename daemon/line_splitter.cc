#include "daemon/line_splitter.h"

namespace tlaunch {

void LineSplitter::feed(std::string_view data, std::string& out) {
  size_t i = 0;
  if (after_cr_ && !data.empty() && data[0] == '\n') i = 1;
  after_cr_ = false;
  while (i < data.size()) {
    size_t end = data.find_first_of("\r\n", i);
    std::string_view piece = data.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    // Cap: emit full-size pieces as cut lines.
    while (partial_.size() + piece.size() > max_line_) {
      size_t take = max_line_ - partial_.size();
      out.append(partial_);
      out.append(piece.substr(0, take));
      out.append(kCutMarker);
      out.push_back('\n');
      partial_.clear();
      piece.remove_prefix(take);
    }
    if (end == std::string_view::npos) {
      partial_.append(piece);
      return;
    }
    out.append(partial_);
    out.append(piece);
    out.push_back('\n');
    partial_.clear();
    i = end + 1;
    if (data[end] == '\r') {
      if (i < data.size()) {
        if (data[i] == '\n') ++i;
      } else {
        after_cr_ = true;
      }
    }
  }
}

void LineSplitter::finish(std::string& out) {
  if (!partial_.empty()) {
    out.append(partial_);
    out.push_back('\n');
    partial_.clear();
  }
  after_cr_ = false;
}

}  // namespace tlaunch
