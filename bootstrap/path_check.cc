#include "bootstrap/path_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tlaunch {

std::optional<std::string> pathProblem(const std::string& path, PathUse use) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR ? "does not exist" : std::strerror(errno);
  switch (use) {
    case PathUse::enter_directory:
      if (!S_ISDIR(st.st_mode)) return "is not a directory";
      if (::access(path.c_str(), X_OK) != 0) return "cannot be entered (" + std::string(std::strerror(errno)) + ")";
      return std::nullopt;
    case PathUse::write_directory:
      if (!S_ISDIR(st.st_mode)) return "is not a directory";
      if (::access(path.c_str(), W_OK | X_OK) != 0) return "is not writable by this user";
      return std::nullopt;
    case PathUse::run_file:
      if (S_ISDIR(st.st_mode)) return "is a directory";
      if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) return "is not an executable file";
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> programOnPath(const std::string& program, const std::string& path) {
  for (size_t start = 0; start <= path.size();) {
    const size_t colon = std::min(path.find(':', start), path.size());
    const std::string dir = colon == start ? "." : path.substr(start, colon - start);
    if (std::string candidate = dir + "/" + program; !pathProblem(candidate, PathUse::run_file)) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

}  // namespace tlaunch
