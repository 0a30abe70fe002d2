#pragma once
// `tlaunchd --keeper`: the process that keeps a node warm between jobs (bootstrap/keeper_protocol.h).
// A job's tlaunchd started with --keep-for starts it first thing; it outlives that daemon by
// `keep_s` seconds, and each job it starts in the meantime resets the count when it ends.
// It runs nothing of a job: the daemons it starts are ordinary job daemons, which end their
// ranks and files with their job as any other.
#include <string>

#include "tlaunch/result.h"

namespace tlaunch {

struct StartedKeeper {
  int port = 0;          // where it listens (every IPv4 address of the node)
  long long pid = 0;     // the detached keeper's pid
  long long since = 0;   // when it started (epoch seconds): with the pid, what tlaunch asks for by name
  int lifeline_fd = -1;  // ours to hold: it closes when this daemon ends, however it ends
  std::string inventory_cache;  // the keeper's inventory cache: this daemon fills it first
};

// In a job's tlaunchd, before it becomes a child subreaper (the keeper must not be its
// descendant, or the job's cleanup would end it): starts `tlaunchd --keeper`, hands it the
// user's secret, and reads back its port and pid. Bounded: 5 s.
Result<StartedKeeper> startWarmKeeper(int keep_s, const std::string& user_secret);

// Where a keeper lives. detached: started by a job's daemon (over ssh); it leaves that daemon's
// session and lives until `keep_s` after the last job it started, the starting daemon's stdin
// counting as a job. slurm_step: a task of the keeper step tlaunch starts inside a Slurm
// allocation (launcher/slurm_keeper_step.h); it stays in that step, so that Slurm ends it with
// the allocation, and counts its time from its start (tlaunch asks it for a daemon at once).
enum class KeeperHome { detached, slurm_step };

// The keeper's main: reads the secret from stdin, binds, writes where it listens to stdout
// ("PORT PID SINCE CACHE\n" detached; "NODE PORT PID SINCE\n" in a Slurm step, NODE being
// Slurm's name for it), then (detached only) detaches into its own session; stdout/stderr go to
// /dev/null and it serves until it expires or is stopped.
int runWarmKeeper(int keep_s, KeeperHome home);

}  // namespace tlaunch
