#include "daemon/rank_end_time.h"

#include <sched.h>

#include <exception>
#include <fstream>
#include <optional>
#include <string>

#include "tlaunch/wall_clock.h"

namespace tlaunch {
namespace {

// The scheduler's clock (ms since boot) when a task last ran: se.exec_start of its
// /proc/.../sched (kernels with CONFIG_SCHED_DEBUG, as distributions build them); none without.
std::optional<double> schedLastRanMs(const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("se.exec_start")) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) return std::nullopt;
      try {
        return std::stod(line.substr(colon + 1));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  return std::nullopt;
}

}  // namespace

// When the zombie `pid` ended, wall-clock microseconds: now, less how long ago it last ran by the
// scheduler's clock. A daemon that waited for a CPU (a loaded node) or was busy would otherwise
// stamp its own noticing, some milliseconds late: as late as a peer that failed of it reacts.
int64_t rankEndedAtMicros(pid_t pid) {
  const auto last = schedLastRanMs("/proc/" + std::to_string(pid) + "/sched");
  ::sched_yield();  // our own exec_start becomes the scheduler's "now"
  const auto self = schedLastRanMs("/proc/thread-self/sched");
  const int64_t now = wallClockMicros();
  if (!last || !self) return now;
  const double age_ms = *self - *last;
  // Beyond a second it is not the daemon's lateness: CPUs' clocks that disagree, or a main thread
  // that ended (pthread_exit) long before the others.
  if (age_ms < 0 || age_ms > 1000) return now;
  return now - static_cast<int64_t>(age_ms * 1000);
}

}  // namespace tlaunch
