#pragma once
// `tlaunch status` on one node: each rank's state, CPU share and resident memory from /proc.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <string_view>

namespace tlaunch {

struct ProcStat {
  char state = '?';           // R, S, D, T, Z...
  unsigned long long cpu_ticks = 0;  // utime + stime
  unsigned long long start_ticks = 0;  // since boot
  long long rss_pages = 0;
  int processor = -1;  // the CPU it last ran on (field 39; -1 where the line stops before it)
};
// The fields of /proc/PID/stat that status and a rank's end time need; false when the line
// does not parse.
bool parseProcStat(std::string_view line, ProcStat& out);

// The proportional set size of `pid` in bytes (/proc/PID/smaps_rollup's Pss: a page shared by
// n processes counts 1/n in each), or -1 where it cannot be read. Forked workers share their
// parent's pages copy-on-write: their RSS summed counts those pages once per process.
long long pssBytes(pid_t pid);
// The Pss line of an smaps_rollup text, in bytes; -1 if there is none.
long long pssBytesIn(std::string_view smaps_rollup);

class RankStatusSampler {
 public:
  struct Sample {
    std::string state;  // running, sleeping, stopped, zombie, exited...
    double cpu_percent = 0;  // since the previous sample of this pid (or its start)
    long long rss_bytes = 0;
  };
  Sample sample(pid_t pid);

 private:
  struct Last {
    unsigned long long ticks = 0;
    unsigned long long start_ticks = 0;  // another process that has the pid since is not this one
    std::chrono::steady_clock::time_point at;
  };
  std::map<pid_t, Last> last_;
};

}  // namespace tlaunch
