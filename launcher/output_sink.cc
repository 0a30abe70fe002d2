#include "launcher/output_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tlaunch {

OutputSink::OutputSink(TagMode mode, std::string output_dir, int stdout_fd, int stderr_fd)
    : mode_(mode), dir_(std::move(output_dir)), out_fd_(stdout_fd), err_fd_(stderr_fd) {}

OutputSink::~OutputSink() {
  for (auto& [k, fd] : files_) ::close(fd);
}

std::string OutputSink::tagFor(TagMode mode, int rank, const std::string& node) {
  switch (mode) {
    case TagMode::none: return {};
    case TagMode::rank: return "[" + std::to_string(rank) + "] ";
    case TagMode::full: return "[" + node + ":" + std::to_string(rank) + "] ";
  }
  return {};
}

void OutputSink::setRankNode(int rank, const std::string& node) { tags_[rank] = tagFor(mode_, rank, node); }

Result<void> OutputSink::openFiles(int world_size) {
  if (dir_.empty()) return {};
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST)
    return fail(Errc::usage, "cannot create --output-dir " + dir_ + ": " + std::strerror(errno));
  for (int r = 0; r < world_size; ++r) {
    for (int s : {1, 2}) {
      std::string path = dir_ + "/rank." + std::to_string(r) + (s == 1 ? ".out" : ".err");
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) return fail(Errc::usage, "cannot write " + path + ": " + std::strerror(errno));
      files_[{r, s}] = fd;
    }
  }
  return {};
}

void OutputSink::writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (fd == out_fd_ || fd == err_fd_) out_broken_ = true;  // e.g. `tlaunch ... | head`
      return;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void OutputSink::write(int rank, int stream, std::string_view lines) {
  if (auto f = files_.find({rank, stream}); f != files_.end()) writeAll(f->second, lines);
  const int fd = stream == 2 ? err_fd_ : out_fd_;
  if (out_broken_ && fd == out_fd_) return;
  auto t = tags_.find(rank);
  const std::string& tag = t != tags_.end() ? t->second : tags_[rank] = tagFor(mode_, rank, "?");
  if (tag.empty()) {
    writeAll(fd, lines);
    return;
  }
  scratch_.clear();
  scratch_.reserve(lines.size() + tag.size() * 16);
  size_t start = 0;
  while (start < lines.size()) {
    size_t nl = lines.find('\n', start);
    size_t end = nl == std::string_view::npos ? lines.size() : nl + 1;
    scratch_.append(tag);
    scratch_.append(lines.substr(start, end - start));
    if (nl == std::string_view::npos) scratch_.push_back('\n');
    start = end;
  }
  writeAll(fd, scratch_);
}

void OutputSink::note(std::string_view text) {
  // Every line prefixed, so that tlaunch's own words are easy to tell from the ranks'.
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
  writeAll(err_fd_, s);
}

}  // namespace tlaunch
