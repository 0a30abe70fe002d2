#pragma once
// Where ranks' lines end up on the frontend: tagged on our stdout/stderr, and optionally one
// untagged file per rank and stream. Lines arrive whole from the daemons; each batch is
// written with one write(2) so concurrent output of different ranks never interleaves
// inside a line.
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

enum class TagMode { none, rank, full };

class OutputSink {
 public:
  OutputSink(TagMode mode, std::string output_dir, int stdout_fd = 1, int stderr_fd = 2);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;
  // Must be called before lines of that rank arrive (the tag names its node).
  void setRankNode(int rank, const std::string& node);
  Result<void> openFiles(int world_size);
  // `lines`: one or more complete lines, each ending in '\n'. stream 1 = stdout, 2 = stderr.
  void write(int rank, int stream, std::string_view lines);
  // A message of tlaunch itself, always to stderr, prefixed "tlaunch: ".
  void note(std::string_view text);
  static std::string tagFor(TagMode mode, int rank, const std::string& node);

 private:
  void writeAll(int fd, std::string_view data);
  TagMode mode_;
  std::string dir_;
  int out_fd_, err_fd_;
  std::map<int, std::string> tags_;
  std::map<std::pair<int, int>, int> files_;
  std::string scratch_;
  bool out_broken_ = false;
};

}  // namespace tlaunch
