#include "daemon/line_splitter.h"

namespace tlaunch {

void LineSplitter::emit(OutputKind kind, std::vector<OutputSegment>& out) {
  if (kind == OutputKind::lines && !out.empty() && out.back().kind == OutputKind::lines) {
    out.back().bytes += partial_;
  } else {
    out.push_back({kind, std::move(partial_)});
  }
  partial_.clear();
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
  while (i < data.size()) {
    const size_t end = data.find_first_of("\r\n", i);
    std::string_view piece = data.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    // The cap: full-size pieces of an over-long line go out marked as continued.
    while (partial_.size() + piece.size() > max_line_) {
      const size_t take = max_line_ - partial_.size();
      partial_.append(piece.substr(0, take));
      piece.remove_prefix(take);
      emit(OutputKind::continued, out);
    }
    partial_.append(piece);
    if (end == std::string_view::npos) return;
    partial_.push_back(data[end]);
    i = end + 1;
    if (data[end] == '\n') {
      emit(OutputKind::lines, out);
    } else if (i == data.size()) {
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
