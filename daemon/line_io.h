#pragma once
// Blocking reads and writes of whole lines on a descriptor, for the pipes between a daemon and
// its warm-daemon keeper (a secret, a line saying where the keeper listens).
#include <string>

namespace tlaunch {

// One line (without its newline, at most 4 KiB), byte by byte: nothing past the newline is
// consumed (the keeper's stdin stays open as its lifeline after the secret). "" at end of file.
std::string readLine(int fd);

// All of `bytes`, retrying after EINTR; false if the descriptor would take no more.
bool writeAll(int fd, const std::string& bytes);

}  // namespace tlaunch
