#include "daemon/rank_status.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>

namespace tlaunch {

bool parseProcStat(std::string_view line, ProcStat& out) {
  // "pid (comm) state ...": comm may hold spaces and parentheses; the fields follow the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string_view::npos || close + 2 >= line.size()) return false;
  std::istringstream in{std::string(line.substr(close + 2))};
  std::string f[22];
  for (auto& x : f)
    if (!(in >> x)) return false;
  try {
    out.state = f[0][0];
    out.cpu_ticks = std::stoull(f[11]) + std::stoull(f[12]);  // fields 14 and 15: utime, stime
    out.start_ticks = std::stoull(f[19]);                      // field 22: starttime
    out.rss_pages = std::stoll(f[21]);                         // field 24: rss
    std::string field;
    for (int n = 25; n <= 39 && in >> field; ++n)
      if (n == 39) out.processor = std::stoi(field);  // field 39: processor
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

RankStatusSampler::Sample RankStatusSampler::sample(pid_t pid) {
  Sample s;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  ProcStat st;
  if (!std::getline(f, line) || !parseProcStat(line, st)) {
    s.state = "exited";
    last_.erase(pid);
    return s;
  }
  switch (st.state) {
    case 'R': s.state = "running"; break;
    case 'S': s.state = "sleeping"; break;
    case 'D': s.state = "disk-wait"; break;
    case 'T': s.state = "stopped"; break;
    case 't': s.state = "traced"; break;
    case 'Z': s.state = "zombie"; break;
    default: s.state = std::string(1, st.state);
  }
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  s.rss_bytes = st.rss_pages * ::sysconf(_SC_PAGESIZE);
  const auto now = std::chrono::steady_clock::now();
  auto it = last_.find(pid);
  double ticks = 0, seconds = 0;
  if (it != last_.end() && it->second.start_ticks == st.start_ticks && st.cpu_ticks >= it->second.ticks) {
    ticks = static_cast<double>(st.cpu_ticks - it->second.ticks);
    seconds = std::chrono::duration<double>(now - it->second.at).count();
  } else {
    // First sample: the average since the process started.
    std::ifstream up("/proc/uptime");
    double uptime = 0;
    up >> uptime;
    ticks = static_cast<double>(st.cpu_ticks);
    seconds = uptime - static_cast<double>(st.start_ticks) / hz;
  }
  if (seconds > 0.01) s.cpu_percent = 100.0 * ticks / hz / seconds;
  last_[pid] = {st.cpu_ticks, st.start_ticks, now};
  return s;
}

long long pssBytesIn(std::string_view smaps_rollup) {
  const std::string_view text = smaps_rollup;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.starts_with("Pss:")) {
      long long kb = 0;
      size_t i = 4;
      while (i < line.size() && line[i] == ' ') ++i;
      const auto [ptr, ec] = std::from_chars(line.data() + i, line.data() + line.size(), kb);
      return ec == std::errc() && ptr != line.data() + i ? kb * 1024 : -1;
    }
    at = end + 1;
  }
  return -1;
}

long long pssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  if (!in) return -1;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return pssBytesIn(text);
}

}  // namespace tlaunch
