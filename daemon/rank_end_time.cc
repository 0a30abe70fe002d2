#include "daemon/rank_end_time.h"

#include <sched.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <optional>
#include <string>

#include "daemon/rank_status.h"
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

// The CPU a task last ran on (/proc/PID/stat); -1 when it cannot be read.
int lastCpu(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  ProcStat st;
  return std::getline(in, line) && parseProcStat(line, st) ? st.processor : -1;
}

// This thread's se.exec_start on `cpu`'s scheduler clock: each CPU's clock is its own (in a VM
// with steal-time accounting two of them were 265 ms apart), so the reading must be taken on
// the CPU the rank last ran on. This thread moves there for the reading and back.
std::optional<double> ownLastRanMsOn(int cpu) {
  cpu_set_t before;
  if (::sched_getaffinity(0, sizeof(before), &before) != 0) return std::nullopt;
  const bool move = ::sched_getcpu() != cpu;
  if (move) {
    cpu_set_t there;
    CPU_ZERO(&there);
    CPU_SET(cpu, &there);
    if (::sched_setaffinity(0, sizeof(there), &there) != 0) return std::nullopt;  // not ours to run on
  }
  ::sched_yield();  // our own exec_start becomes the scheduler's "now" there
  auto self = ::sched_getcpu() == cpu ? schedLastRanMs("/proc/thread-self/sched") : std::nullopt;
  if (move) ::sched_setaffinity(0, sizeof(before), &before);
  return self;
}

}  // namespace

// When the zombie `pid` ended, wall-clock microseconds: now, less how long ago it last ran by the
// scheduler's clock. A daemon that waited for a CPU (a loaded node) or was busy would otherwise
// stamp its own noticing, some milliseconds late: as late as a peer that failed of it reacts.
int64_t rankEndedAtMicros(pid_t pid, int64_t unwatched_ms) {
  const auto last = schedLastRanMs("/proc/" + std::to_string(pid) + "/sched");
  const int cpu = lastCpu(pid);
  const auto self = last && cpu >= 0 ? ownLastRanMsOn(cpu) : std::nullopt;
  const int64_t now = wallClockMicros();
  if (!last || !self) return now;
  const double age_ms = *self - *last;
  // Beyond a second (and the time it was not watched) it is not the daemon's lateness: a main
  // thread that ended (pthread_exit) long before the others.
  if (age_ms < 0 || age_ms > 1000.0 + static_cast<double>(std::max<int64_t>(unwatched_ms, 0))) return now;
  return now - static_cast<int64_t>(age_ms * 1000);
}

}  // namespace tlaunch
