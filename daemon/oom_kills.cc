#include "daemon/oom_kills.h"

#include <fstream>

namespace tlaunch {

std::optional<long long> oomKillCount(const std::string& vmstat_path) {
  std::ifstream in(vmstat_path);
  std::string name;
  long long value = 0;
  while (in >> name >> value)
    if (name == "oom_kill") return value;
  return std::nullopt;
}

}  // namespace tlaunch
