#pragma once
// Files of jobs whose tlaunchd died without cleaning up (kill -9, the OOM killer): each job
// directory `<tmp>/tlaunch.<job>.<node>` holds the process id and start time of the daemon
// that made it, and a later daemon on the node removes the directories, there and under
// /dev/shm (same name), whose daemon is gone. A directory without that mark is left alone.
#include <string>
#include <vector>

namespace tlaunch {

inline constexpr const char* kOwnerMarkFile = ".tlaunchd-owner";

// Writes this process's mark into `dir`; false if it could not.
bool writeOwnerMark(const std::string& dir);

// Removes the marked "tlaunch.*" directories under `tmp_base` whose daemon is gone, with their
// namesakes under `shm_base`; returns the paths removed.
std::vector<std::string> removeStaleJobDirs(const std::string& tmp_base, const std::string& shm_base);

}  // namespace tlaunch
