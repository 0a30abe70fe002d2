#include "daemon/stale_job_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tlaunch {

namespace {

namespace fs = std::filesystem;

// Field 22 of /proc/<pid>/stat (clock ticks since boot): with the pid, it names one process
// even after the pid is reused. "" when the process does not exist.
std::string startTime(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!f || !std::getline(f, stat)) return "";
  const auto close = stat.rfind(')');  // the command name may contain spaces and parentheses
  if (close == std::string::npos) return "";
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

bool ownerAlive(const fs::path& mark) {
  std::ifstream f(mark);
  long pid = 0;
  std::string start;
  if (!(f >> pid >> start) || pid <= 0) return true;  // unreadable: not ours to judge
  return startTime(static_cast<pid_t>(pid)) == start;
}

}  // namespace

bool writeOwnerMark(const std::string& dir) {
  const std::string start = startTime(::getpid());
  if (start.empty()) return false;
  std::ofstream f(fs::path(dir) / kOwnerMarkFile, std::ios::trunc);
  f << ::getpid() << " " << start << "\n";
  return static_cast<bool>(f);
}

std::vector<std::string> removeStaleJobDirs(const std::string& tmp_base, const std::string& shm_base) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tmp_base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("tlaunch.", 0) != 0 || !entry.is_directory(ec)) continue;
    const fs::path mark = entry.path() / kOwnerMarkFile;
    if (!fs::exists(mark, ec) || ownerAlive(mark)) continue;
    for (const fs::path& dir : {fs::path(shm_base) / name, entry.path()}) {
      std::error_code rm;
      if (fs::remove_all(dir, rm) > 0 && !rm) removed.push_back(dir.string());
    }
  }
  return removed;
}

}  // namespace tlaunch
