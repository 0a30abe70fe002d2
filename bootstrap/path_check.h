#pragma once
// Why a path given by the user (or their environment) cannot serve its use, in words a message
// can quote after the path: "does not exist", "is a directory", ... One check for the working
// directory, TMPDIR and tlaunchd, so that they say the same thing the same way.
#include <optional>
#include <string>

namespace tlaunch {

enum class PathUse {
  enter_directory,  // a working directory: a directory this user can enter
  write_directory,  // TMPDIR: a directory this user can create files in
  run_file,         // a program: a regular file this user can execute
};

std::optional<std::string> pathProblem(const std::string& path, PathUse use);

// Where a program named without a '/' is on `path` (a PATH value: ':'-separated, an empty entry
// is the working directory), as execvp would find it; nullopt when on none.
std::optional<std::string> programOnPath(const std::string& program, const std::string& path);

}  // namespace tlaunch
